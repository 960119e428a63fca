"""What a command does for a domain, above the domain libraries and the engine: load a suite,
read the files, run the engine, store and summarise the run. Judge calibration
(:mod:`~agentgauge.workflows.calibration`), review and baseline runs
(:mod:`~agentgauge.workflows.review_runs`, :mod:`~agentgauge.workflows.review_report`),
tool-call scoring and model runs (:mod:`~agentgauge.workflows.toolcall_runs`) and their
failures report (:mod:`~agentgauge.workflows.toolcall_failures`)."""
