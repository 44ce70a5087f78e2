"""The public value types, one module each (as aiokafka's ``structs.py``); the facade
(``producer``, ``producer.consumer``) re-exports them: import them from there.

At the floor, below even the error tree (they import no SDK module): what every error
carries, ``AttemptOutcome`` and ``AttemptRecord`` (``attempt_record``) and ``Fate``
(``fate``); ``producer.errors`` re-exports them.

Below the remoting core that encodes them (they import only the error tree and the
response-code table): ``Message`` and ``MessageQueue`` (``message``), ``SendStatus``
(``send_status``, with the code-to-status lookup), ``SendResult`` (``send_result``),
``RetryPolicy`` (``retry_policy``), ``AttemptContext`` (``attempt_context``),
``TransactionState`` (``transaction_state``), ``TransactionResult``
(``transaction_result``), ``Reply`` (``reply``), ``Credentials`` (``credentials``),
``LifecycleState`` (``lifecycle_state``) and the trace records (``trace_records``).

Above it, ``consumer``: the consumer side's types, since a received message decodes its
properties and ids on first read with the core's functions. The core's encoders and
decoders of these types stay in ``producer._remoting``, as functions.
"""
