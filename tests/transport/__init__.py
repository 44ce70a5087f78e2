"""Tests of the I/O shell (producer._transport) over real sockets on 127.0.0.1."""
