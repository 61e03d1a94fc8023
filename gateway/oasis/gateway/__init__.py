"""The HTTP gateway: search page, SearXNG-shaped JSON API, OpenSearch, /status dashboard, /metrics."""
