"""gunicorn's settings wherever the app is served: `make run`, the bench, the tests, production.

Only the request limits live here; bind, workers and timeout stay on the command line
(`gunicorn -c gunicorn.conf.py config.wsgi --bind … --workers …`), which wins over this file.

gunicorn answers a request over these limits itself, before Django, with a plain-text
400/414/431 instead of our JSON envelope. So they are set high enough that no realistic
client meets them; the proxy in front keeps its own limits at or below these, so an
oversized request is refused there (docs/deployment.md §3).
"""

# The request line (method, path with query string, protocol). gunicorn's default of 4094
# turned away GET URLs with long query strings; 8190 is the highest value short of
# "unlimited" (0), and what nginx and Apache accept by default.
limit_request_line = 8190

# Number of header fields. The default 100 can be met by a client behind a chain of
# proxies and tracing tools that each add a few; 200 is far past any real request.
limit_request_fields = 200

# Bytes in one header field, name and value. The default 8190 is less than a browser's
# Cookie header can grow to on a shared domain, or a bearer JWT with many claims; 32 KiB
# holds both with room. (Headers are read into memory: fields × size bounds it at ~6 MiB.)
limit_request_field_size = 32768
