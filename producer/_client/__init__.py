"""The role-neutral client shell every client shares, above the transport: the one door
every request leaves through (``remoting.RemotingClient``, where the ACL signer sits),
topic routes looked up and refreshed (``routes``), the background upkeep of route
refresh, heartbeats, probes and unregistering (``upkeep``), time and this host's facts
as parameters (``clock``, ``host``), a request to a topic's queues in turn for the side
channels (``in_turn``) and each client's options written once (``keywords``).

Nothing here sends a user's message (that is ``producer._send``) or consumes one (that is
``producer.consumer``); import from the modules, this package re-exports nothing.
"""
