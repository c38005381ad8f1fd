//! Building the live objects at `start`: streams and filters, headers,
//! destination queues, sender threads and the writer thread.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;

use omsp::Schema;

use crate::client::{Clock, Registry, Shared};
use crate::clock_report::{clock_schema, ClockReport, CLOCK_STREAM};
use crate::destination::label;
use crate::error::ClientError;
use crate::header::{exact_doubles_key, header_with_keys, Identity};
use crate::instrumentation::Instrumentation;
use crate::layout::{check_streams, streams_for, Indexer};
use crate::queue::dest::DestQueue;
use crate::spec::Backchannel;
use crate::stream::Stream;
use crate::transport::{self, SenderCtx, SessionSpec};
use crate::writer::output::Output;
use crate::writer::Writer;

/// What `start` hands back to the client.
pub(crate) type Started = (JoinHandle<()>, Vec<Arc<DestQueue>>, Indexer);

/// Builds everything and starts the threads. Nothing is left running on
/// error.
pub(crate) fn start(
    sh: &Arc<Shared>,
    reg: &Registry,
    clock: Clock,
    identity: &Identity,
) -> Result<Started, ClientError> {
    let spec = &sh.spec;
    check_streams(&spec.destinations, &reg.mps)?;
    let mut indexer = Indexer::new(if sh.instr_on() { 2 } else { 1 });
    let mut per_dest: Vec<Vec<Stream>> = spec.destinations.iter().map(|_| Vec::new()).collect();
    for mp in &reg.mps {
        for (d, dest) in spec.destinations.iter().enumerate() {
            let streams = streams_for(&identity.app, mp, dest, spec.default_window, &mut indexer)?;
            per_dest[d].extend(streams);
        }
    }
    for (streams, dest) in per_dest.iter().zip(&spec.destinations) {
        let mut names = HashSet::new();
        for s in streams {
            if !names.insert(s.schema.name.as_str()) {
                return Err(ClientError::DuplicateStream {
                    uri: label(&dest.uri),
                    name: s.schema.name.clone(),
                });
            }
        }
    }
    // `_client_clock` takes the index after the MPs known now, so theirs
    // stay liboml2's; it goes to TCP destinations only.
    let clock_on = spec.clock_interval.is_some()
        && spec
            .destinations
            .iter()
            .any(|d| matches!(d.uri, crate::spec::Uri::Tcp { .. }));
    let clock_schema = clock_on.then(|| clock_schema(indexer.reserve(CLOCK_STREAM)));
    let sinks = spec
        .destinations
        .iter()
        .map(|d| transport::open(&d.uri))
        .collect::<Result<Vec<_>, _>>()?;

    let mut queues: Vec<Arc<DestQueue>> = Vec::new();
    let mut senders = Vec::new();
    let mut outputs = Vec::new();
    for ((dest, sink), streams) in spec.destinations.iter().zip(sinks).zip(per_dest) {
        let instr = dest.instrumentation && sh.instr_on();
        let clock = clock_schema
            .as_ref()
            .filter(|_| matches!(dest.uri, crate::spec::Uri::Tcp { .. }));
        let mut schemas: Vec<&Schema> = streams.iter().map(|s| &s.schema).collect();
        schemas.extend(clock);
        let instr_window = crate::instr_window::window_for(dest, spec.default_window);
        let instr_schema =
            instr.then(|| crate::instr_window::schema(crate::header::INSTR_INDEX, instr_window));
        // Exact doubles (spec §3.8): offered to binary TCP receivers.
        let exact = !spec.reference_doubles
            && dest.encoding == crate::spec::Encoding::Binary
            && matches!(dest.uri, crate::spec::Uri::Tcp { .. });
        let keys = if exact {
            vec![exact_doubles_key()]
        } else {
            Vec::new()
        };
        let header = header_with_keys(
            identity,
            dest.encoding,
            instr_schema.as_ref(),
            &schemas,
            keys,
        );
        let name = label(&dest.uri);
        let queue = Arc::new(DestQueue::new(
            dest.bufsize.max(1),
            Arc::clone(&sh.memory),
            name.clone(),
        ));
        let ctx = SenderCtx {
            queue: Arc::clone(&queue),
            header,
            label: name.clone(),
            close_timeout: sh.options.close_timeout,
            session: match (&dest.uri, dest.backchannel) {
                (crate::spec::Uri::Tcp { .. }, mode) if mode != Backchannel::Off => {
                    Some(SessionSpec {
                        mode,
                        identity: identity.clone(),
                        encoding: dest.encoding,
                        instrumentation: instr_schema.clone(),
                        schemas: schemas.iter().map(|s| (*s).clone()).collect(),
                        answer_timeout: sh.options.backchannel_timeout,
                        exact_doubles: exact,
                    })
                }
                _ => None,
            },
            shared: Arc::clone(sh),
            exact_doubles: exact,
        };
        match transport::spawn(sink, ctx) {
            Ok(h) => senders.push(h),
            Err(e) => {
                stop(&queues, senders);
                return Err(e);
            }
        }
        let mut output = Output::new(
            name,
            Arc::clone(&queue),
            dest.encoding,
            dest.policy,
            streams,
            instr,
        );
        output.clock_index = clock.map(|s| s.index);
        if exact {
            output.encode_exact_doubles();
        }
        output.instr_window = crate::instr_window::InstrWindow::new(instr_window);
        output.seq_base = sh.options.first_seq - 1;
        outputs.push(output);
        queues.push(queue);
    }
    let instr = spec
        .instr_interval
        .filter(|_| sh.instr_on())
        .map(Instrumentation::new);
    let writer = Writer::new(
        Arc::clone(sh),
        clock,
        outputs,
        reg.mps.clone(),
        senders,
        instr,
        spec.clock_interval
            .filter(|_| clock_on)
            .map(ClockReport::new),
    );
    let handle = std::thread::Builder::new()
        .name("sg-writer".into())
        .spawn(move || writer.run())
        .map_err(|source| {
            // The writer (and the sender handles) went down with the closure;
            // closing the queues lets the senders end on their own.
            for q in &queues {
                q.close();
            }
            ClientError::Spawn {
                what: "writer",
                source,
            }
        })?;
    Ok((handle, queues, indexer))
}

/// Stops the senders started so far.
fn stop(queues: &[Arc<DestQueue>], senders: Vec<JoinHandle<()>>) {
    for q in queues {
        q.close();
    }
    for h in senders {
        let _ = h.join();
    }
}
