"""A contract type for import-linter (.importlinter): no module imports a test module.

A test module (a module named test_*: pytest collects it) holds tests; what several test modules
share lives in a helper module (factories, conftest, tests/<area>/running.py, harness/), so that
each test module can change or go without breaking another. import-linter's own `forbidden`
contract cannot say this: its module expressions match whole names only (`tests.**.test_*` is
refused as "not a valid module expression"), so this type finds the test modules by name."""

from __future__ import annotations

from importlinter import Contract, ContractCheck, output


def _is_test_module(module: str) -> bool:
    return module.rpartition(".")[2].startswith("test_")


class NoTestModuleImported(Contract):
    def check(self, graph, verbose: bool) -> ContractCheck:
        imports = [{"importer": importer, "imported": test,
                    "lines": graph.get_import_details(importer=importer, imported=test)}
                   for test in sorted(filter(_is_test_module, graph.modules))
                   for importer in sorted(graph.find_modules_that_directly_import(test))]
        return ContractCheck(kept=not imports, metadata={"imports": imports})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for found in check.metadata["imports"]:
            output.print_error(f"{found['importer']} imports the test module {found['imported']}:", bold=True)
            for line in found["lines"]:
                output.indent_cursor()
                output.print_error(f"{found['importer']}:{line['line_number']}: {line['line_contents']}", bold=False)
            output.new_line()
        output.print("Move what they share into a helper module (factories, conftest, a module not named test_*).")
