//! streamgauge observer-effect runner: factorial plans, workloads in network namespaces, responses measured independently of the instrumented tool.
