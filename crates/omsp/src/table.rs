//! The schema table of one session: which schema each stream index means.

use std::sync::Arc;

use crate::metadata::schema0;
use crate::schema::{Schema, SchemaError};

/// Index → schema bindings of one session. Indices can be re-bound (a schema
/// declared again replaces the earlier one, as in the reference).
#[derive(Debug, Clone)]
pub struct SchemaTable {
    slots: Vec<Option<Arc<Schema>>>,
    max_index: u32,
}

impl SchemaTable {
    /// An empty table accepting indices up to `max_index`.
    pub fn new(max_index: u32) -> SchemaTable {
        SchemaTable {
            slots: Vec::new(),
            max_index,
        }
    }

    /// Binds `schema.index` to `schema`; returns the schema it replaced.
    pub fn bind(&mut self, schema: Schema) -> Result<Option<Arc<Schema>>, SchemaError> {
        if schema.index > self.max_index {
            return Err(SchemaError::IndexTooLarge {
                index: schema.index,
                max: self.max_index,
            });
        }
        let i = schema.index as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        Ok(self.slots[i].replace(Arc::new(schema)))
    }

    /// The schema bound to `index`. Index 0 falls back to the standard
    /// `_experiment_metadata` schema if the sender never declared it.
    pub fn get(&mut self, index: u32) -> Option<&Arc<Schema>> {
        if index == 0 && self.slots.first().is_none_or(Option::is_none) {
            // Cannot fail: 0 is always within the limit.
            let _ = self.bind(schema0());
        }
        self.slots.get(index as usize).and_then(Option::as_ref)
    }

    /// The schema bound to `index`, without the schema-0 fallback.
    pub fn lookup(&self, index: u32) -> Option<&Arc<Schema>> {
        self.slots.get(index as usize).and_then(Option::as_ref)
    }

    /// Every bound schema, by index.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Schema>> {
        self.slots.iter().flatten()
    }
}
