"""Middleware layers: each a `DelegatingChatClient` with a `with_<behaviour>()` factory."""
