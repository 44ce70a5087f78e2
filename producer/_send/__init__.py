"""The send path (no public names): how one message, batch or request gets from
``Producer.send*`` to a broker's answer.

``plan`` decides (the pure retry state machine: attempts, back-offs, the finish) and
``planner`` makes a send's plan; ``job`` is what one send carries; ``send`` is one send as
one object, with its states and the one ``finish`` that frees its in-flight slot
(``backpressure``) and flush ticket (``tracker``) and resolves its caller (``future``);
``sender`` drives a send from its slot to its finish, one loop for every mode, and
``attempt`` carries out one attempt's request and settlement. ``accumulator`` and
``batch_sends`` batch ``send_async`` calls transparently; ``async_runner`` and
``owned_tasks`` run the sends that need a task; ``timed`` checks timed delivery;
``hooks`` and ``telemetry`` tell the user's hooks and OpenTelemetry; ``running`` holds a
started producer's parts and ``options`` its settings."""
