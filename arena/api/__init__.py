"""The JSON API's toolkit, below every app and importing none: `http` (the error shape, reading a
JSON body, refusals and the 413) and `openapi` (the shared schemas, response helpers and the
document's skeleton). Each app's endpoints are in its own api.py, described in its openapi.py."""
