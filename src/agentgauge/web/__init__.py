"""``agentgauge view``: a local web app over the results store, and the front-end that the
self-contained HTML report shares with it.

:mod:`~agentgauge.web.documents` builds what each page shows as JSON data from the store;
:mod:`~agentgauge.web.app` serves it on 127.0.0.1; :mod:`~agentgauge.web.frontend` holds the
page shell and the shipped assets (no request ever leaves the machine).
"""
