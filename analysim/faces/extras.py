"""Optional packages: the one-line error every front end gives when one is missing.

``figures`` and the notebooks need the ``notebooks`` extra, ``explore`` the ``notebooks``
extra (ipywidgets), sweeps on Dask the ``sweeps`` extra. Whatever command or function finds a
package missing raises :class:`MissingPackage` with the same sentence, naming the extra.
"""

from __future__ import annotations

EXTRA_OF = {
    **dict.fromkeys(
        (
            "papermill",
            "nbformat",
            "nbclient",
            "ipykernel",
            "jupyterlab",
            "ipywidgets",
            "playwright",
        ),
        "notebooks",
    ),
    **dict.fromkeys(("dask", "distributed", "cryptography", "yaml"), "sweeps"),
    **dict.fromkeys(("sphinx", "furo", "myst_nb", "myst_parser"), "docs"),
}
"""The extra of ``setup.cfg`` that installs each optional package (by import name)."""


class MissingPackage(ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def missing_package_message(package: str, what: str = "this command") -> str:
    """``"<what> needs the Python package 'X', which is not installed; install the 'E'
    extra: pip install 'analysim[E]'"``, on one line."""
    package = package.split(".")[0]
    message = f"{what} needs the Python package {package!r}, which is not installed"
    extra = EXTRA_OF.get(package)
    if extra:
        message += (
            f"; install the '{extra}' extra: pip install 'analysim[{extra}]' "
            f"(in a checkout: pip install -e '.[{extra}]')"
        )
    return message


def missing_package(package: str, what: str = "this command") -> MissingPackage:
    """The :class:`MissingPackage` error to raise (``raise missing_package(...) from exc``)."""
    error = MissingPackage(missing_package_message(package, what))
    error.name = package.split(".")[0]
    return error
