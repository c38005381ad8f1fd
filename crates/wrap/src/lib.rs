//! streamgauge wrappers for legacy measurement tools (ping, iperf3): run them and report their output as measurement streams.
