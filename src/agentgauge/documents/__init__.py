"""What the HTML report and the viewer both show: a run's figures
(:mod:`~agentgauge.documents.summary`), the comparison of two runs
(:mod:`~agentgauge.documents.compare`), each page's data as JSON built from the store
(:mod:`~agentgauge.documents.pages`, with trace content made safe by
:mod:`~agentgauge.documents.safe`), and the front-end that renders them: the page shell and the
shipped assets (:mod:`~agentgauge.documents.frontend`).

The report (:mod:`agentgauge.report`) writes them into one file; the viewer
(:mod:`agentgauge.web`) serves them.
"""
