//! Operator limits of a capture node. A request asking for more than the
//! policy allows is refused with the reason; it is never silently weakened.

use crate::anon::AddrFields;
use crate::config::SessionConfig;
use serde::{Deserialize, Serialize};

/// What the operator of a node allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePolicy {
    /// Every session must be header-only.
    #[serde(default)]
    pub header_only_forced: bool,
    /// Every session must anonymise both source and destination addresses.
    #[serde(default)]
    pub anonymization_mandatory: bool,
    /// Largest snap length a session may ask for.
    #[serde(default)]
    pub max_snaplen: Option<u32>,
    /// Interfaces sessions may capture on (absent = any).
    #[serde(default)]
    pub allowed_interfaces: Option<Vec<String>>,
}

/// Why the policy refuses a session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyRefusal {
    /// Full packets requested on a header-only node.
    #[error("session {session}: this node only allows header-only capture; set header_only: true")]
    HeaderOnlyRequired {
        /// Session name.
        session: String,
    },
    /// No (or partial) anonymisation on a node that requires it.
    #[error("session {session}: this node requires anonymisation of source and destination addresses; add anonymization with fields: both")]
    AnonymizationRequired {
        /// Session name.
        session: String,
    },
    /// Snap length above the node's maximum.
    #[error("session {session}: snaplen {requested} exceeds this node's maximum {max}")]
    SnaplenTooLarge {
        /// Session name.
        session: String,
        /// Requested value.
        requested: u32,
        /// Allowed maximum.
        max: u32,
    },
    /// Interface not allowed (or not given while the node restricts them).
    #[error("session {session}: interface {interface:?} is not allowed on this node (allowed: {allowed:?})")]
    InterfaceNotAllowed {
        /// Session name.
        session: String,
        /// Requested interface.
        interface: Option<String>,
        /// Allowed interfaces.
        allowed: Vec<String>,
    },
}

impl NodePolicy {
    /// Accepts `c` or refuses it with the first violated limit.
    pub fn check(&self, c: &SessionConfig) -> Result<(), PolicyRefusal> {
        let session = c.name.clone();
        if self.header_only_forced && !c.header_only {
            return Err(PolicyRefusal::HeaderOnlyRequired { session });
        }
        if self.anonymization_mandatory
            && !c
                .anonymization
                .as_ref()
                .is_some_and(|a| a.fields == AddrFields::Both)
        {
            return Err(PolicyRefusal::AnonymizationRequired { session });
        }
        if let Some(max) = self.max_snaplen {
            if c.snaplen > max {
                return Err(PolicyRefusal::SnaplenTooLarge {
                    session,
                    requested: c.snaplen,
                    max,
                });
            }
        }
        if let Some(allowed) = &self.allowed_interfaces {
            if !c.interface.as_ref().is_some_and(|i| allowed.contains(i)) {
                return Err(PolicyRefusal::InterfaceNotAllowed {
                    session,
                    interface: c.interface.clone(),
                    allowed: allowed.clone(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_more_never_weakens() {
        let p = NodePolicy {
            header_only_forced: true,
            anonymization_mandatory: true,
            max_snaplen: Some(128),
            allowed_interfaces: Some(vec!["eth1".into()]),
        };
        let mut c =
            SessionConfig::from_json(r#"{"name":"a","snaplen":96,"interface":"eth1"}"#).unwrap();
        assert!(matches!(
            p.check(&c),
            Err(PolicyRefusal::HeaderOnlyRequired { .. })
        ));
        c.header_only = true;
        assert!(matches!(
            p.check(&c),
            Err(PolicyRefusal::AnonymizationRequired { .. })
        ));
        c.anonymization = Some(crate::config::AnonConfig {
            fields: AddrFields::Src,
            key: "k".into(),
        });
        assert!(matches!(
            p.check(&c),
            Err(PolicyRefusal::AnonymizationRequired { .. })
        ));
        c.anonymization.as_mut().unwrap().fields = AddrFields::Both;
        assert_eq!(p.check(&c), Ok(()));
        c.snaplen = 1500;
        let e = p.check(&c).unwrap_err();
        assert!(
            e.to_string().contains("exceeds this node's maximum 128"),
            "{e}"
        );
        assert_eq!(c.snaplen, 1500, "the request is not modified");
        c.snaplen = 64;
        c.interface = Some("eth0".into());
        assert!(matches!(
            p.check(&c),
            Err(PolicyRefusal::InterfaceNotAllowed { .. })
        ));
    }
}
