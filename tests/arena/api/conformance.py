"""Whether a response body matches the API's own OpenAPI description (arena.openapi.SPEC):
for the states the fuzzer (test_fuzz_api.py) seldom reaches."""


def assert_conforms(body, path: str, method: str = "get", status: int = 200) -> None:
    """`body` matches the description's schema for that response, formats (uuid, date-time, uri) included."""
    import jsonschema_rs

    from arena.openapi import SPEC

    schema = SPEC["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    jsonschema_rs.Draft202012Validator(schema, validate_formats=True).validate(body)
