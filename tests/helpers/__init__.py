"""What test modules share: clusters' set-ups, clients made the usual way, clocks, waits.

A test module imports helpers from here (or from another module that is not a
``test_*`` one), never from another test module: importing one runs its fixtures'
module and ties two test files together (``tests/test_helpers_layout.py`` checks it).
"""
