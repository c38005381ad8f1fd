//! streamgauge benchmark harnesses: server ingest, observer effect, readers, query, capture, C inject/observer, each against a baseline measured in the same run.
