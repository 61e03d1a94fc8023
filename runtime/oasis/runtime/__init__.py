"""oasis.runtime: the shared bottom layer every service builds on (URLs, HTML parsing, the gRPC service
runtime, client adapters). It imports nothing else of Oasis but the generated API, ``oasis.v1``."""
