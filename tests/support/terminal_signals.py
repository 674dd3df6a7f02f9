"""Python source that gives a child interpreter Ctrl-C as a terminal would.

A suite started in the background (``make test &``, nohup) hands its children SIGINT ignored, and
Python then installs no KeyboardInterrupt handler of its own: a test that sends SIGINT to a
``python -c`` child would wait for an end that never comes.  Put :data:`TERMINAL_CTRL_C` first in
the child's source.
"""

TERMINAL_CTRL_C = ("import signal\n"
                   "signal.signal(signal.SIGINT, signal.default_int_handler)\n")
