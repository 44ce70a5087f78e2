"""Request-reply's I/O: the requester (``Producer.request``) and the replier
(``Producer.send_reply``); the wire format is :mod:`producer._remoting.reply`."""
