"""`POST /v1/responses/compact`: a conversation's window as one opaque `compaction` item
(`_compact`), and its expansion when a later request sends the item back (`_window`, which request
reading imports: nothing is imported here, so that reading a request does not import the route)."""
