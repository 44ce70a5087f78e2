"""The consumer side's public value types. A received message decodes its properties and
ids on first read with the wire core's functions, so these sit above ``producer._remoting``
(the rest of ``producer._types`` sits below it): ``ReceivedMessage`` (``received``),
``PoppedMessage`` and its receipt (``popped``), ``ConsumeStatus`` (``status``),
``ConsumeContext`` (``context``), ``ConsumeRetryPolicy`` (``retry_policy``) and
``DeadLetter`` (``dead_letter``). Import them from ``producer.consumer``.
"""
