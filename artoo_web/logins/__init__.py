"""Log-in throttling that one address cannot turn against everyone.

A failed password is counted under the keys of its attempt (``throttle.py``);
a browser that logged in before proves it with its device cookie
(``device.py``) and is counted on its own; ``web.py`` joins both to Django's
log-in (an authentication backend, the log-in signals, a middleware).
"""
