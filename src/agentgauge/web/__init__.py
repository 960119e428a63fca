"""``agentgauge view``: a local web app over the results store.

:mod:`~agentgauge.web.app` serves on 127.0.0.1 the documents that
:mod:`agentgauge.documents` builds from the store, and the front-end that renders them (no
request ever leaves the machine).
"""
