"""Known real corpora: Debian documentation packages installed under /usr/share/doc.

- ``postgresql-doc-15``: /usr/share/doc/postgresql-doc-15/html at http://postgresql.docs.local/
- ``python3.11-doc``: /usr/share/doc/python3.11-doc/html (a symlink to ../python3.11/html) at
  http://python.docs.local/
- ``python-django-doc``: /usr/share/doc/python-django-doc/html at http://django.docs.local/
- ``all``: the three together, one host each.
- Experiment corpora (issue 10's holdout split; not in ``all``, not installed by ``./dev setup``):
  ``python-sqlalchemy-doc`` (/usr/share/doc/python-sqlalchemy-doc/html at http://sqlalchemy.docs.local/) and
  ``python-celery-doc`` (/usr/share/doc/python-celery-doc/html at http://celery.docs.local/); issue 10's
  widened training split (session 6): ``python-pytest-doc`` (http://pytest.docs.local/) and
  ``python-distributed-doc`` (http://distributed.docs.local/); issue 10's holdout-2 split (session 6):
  ``python-scrapy-doc`` (http://scrapy.docs.local/) and ``python-tornado-doc`` (http://tornado.docs.local/);
  holdout-3 to holdout-5 (sessions 7-9): kombu, pymongo, gevent, cherrypy3, pil and sphinx-doc,
  each at /usr/share/doc/PACKAGE/html; holdout-6 (session 10): ``python-dask-doc`` and
  ``python-fonttools-doc`` (at /usr/share/doc/fonttools/html); holdout-7 (session 10):
  ``python-pygame-doc`` and ``python-flask-doc``; holdout-8 (session 11): ``python-cryptography-doc`` and
  ``python-lxml-doc`` (at /usr/share/doc/python-lxml/html); holdout-9 (session 11): ``python-werkzeug-doc``
  and ``python-ipython-doc``; holdout-10 (session 13): ``python-djangorestframework-doc`` (at
  /usr/share/doc/python3-djangorestframework/html) and ``python-h5py-doc``; holdout-11 (session 14):
  ``python-aiohttp-doc`` and ``python-tables-doc`` (PyTables); holdout-12 (session 15): ``python-authlib-doc``
  and ``python-ezdxf-doc``; holdout-13 (session 16): ``python-quart-doc`` and ``python-gitlab-doc``;
  holdout-14 (session 17): ``python-sklearn-doc`` and ``python-sympy-doc``; holdout-15 (session 17):
  ``python-astropy-doc`` and ``python-skimage-doc``; holdout-16 (session 18): ``python-ase-doc`` and
  ``python-nibabel-doc``; holdout-17 (session 19): ``python-statsmodels-doc`` and ``python-mdtraj-doc``;
  holdout-18 (session 19): ``python-mdanalysis-doc`` and ``python-whoosh-doc``.

The Django docs link into the Python docs by absolute paths ``/usr/share/doc/python3-doc/html/...`` (the
unversioned package, not installed here; every such target exists under python3.11-doc/html), so that
prefix, ``/usr/share/doc/python3.11-doc/html`` and its real path ``/usr/share/doc/python3.11/html`` all map
to the Python host. Loading ``python-django-doc`` alone keeps those links (they point out of the corpus).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from oasis.web.corpus import CorpusError, load_html_tree, load_multi_host
from oasis.web.model import Corpus

logger = logging.getLogger(__name__)

DOC_ROOT = Path("/usr/share/doc")


@dataclass(frozen=True, kw_only=True)
class DebianCorpus:
    name: str
    package: str
    root: Path
    base_url: str
    seed: str = "index.html"
    aliases: tuple[str, ...] = ()  # other filesystem prefixes that hrefs use for this tree
    experiment: bool = False  # an experiment corpus: not part of ``all``

    def __post_init__(self) -> None:
        if not self.base_url.endswith("/"):
            raise ValueError("base_url must end with '/'")

    @property
    def installed(self) -> bool:
        return (self.root / self.seed).is_file()


DEBIAN_CORPORA: dict[str, DebianCorpus] = {
    c.name: c
    for c in (
        DebianCorpus(
            name="postgresql-doc-15",
            package="postgresql-doc-15",
            root=DOC_ROOT / "postgresql-doc-15" / "html",
            base_url="http://postgresql.docs.local/",
        ),
        DebianCorpus(
            name="python3.11-doc",
            package="python3.11-doc",
            root=DOC_ROOT / "python3.11-doc" / "html",
            base_url="http://python.docs.local/",
            aliases=(str(DOC_ROOT / "python3-doc" / "html"), str(DOC_ROOT / "python3.11" / "html")),
        ),
        DebianCorpus(
            name="python-django-doc",
            package="python-django-doc",
            root=DOC_ROOT / "python-django-doc" / "html",
            base_url="http://django.docs.local/",
        ),
        DebianCorpus(
            name="python-sqlalchemy-doc",
            package="python-sqlalchemy-doc",
            root=DOC_ROOT / "python-sqlalchemy-doc" / "html",
            base_url="http://sqlalchemy.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-celery-doc",
            package="python-celery-doc",
            root=DOC_ROOT / "python-celery-doc" / "html",
            base_url="http://celery.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-pytest-doc",
            package="python-pytest-doc",
            root=DOC_ROOT / "python-pytest-doc" / "html",
            base_url="http://pytest.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-distributed-doc",
            package="python-distributed-doc",
            root=DOC_ROOT / "python-distributed-doc" / "html",
            base_url="http://distributed.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-scrapy-doc",
            package="python-scrapy-doc",
            root=DOC_ROOT / "python-scrapy-doc" / "html",
            base_url="http://scrapy.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-tornado-doc",
            package="python-tornado-doc",
            root=DOC_ROOT / "python-tornado-doc" / "html",
            base_url="http://tornado.docs.local/",
            experiment=True,
        ),
        # holdout-3 (session 7), fixed before any evaluation run: docs/replay.md "Session 7"
        DebianCorpus(
            name="python-kombu-doc",
            package="python-kombu-doc",
            root=DOC_ROOT / "python-kombu-doc" / "html",
            base_url="http://kombu.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-pymongo-doc",
            package="python-pymongo-doc",
            root=DOC_ROOT / "python-pymongo-doc" / "html",
            base_url="http://pymongo.docs.local/",
            experiment=True,
        ),
        # holdout-4 (session 8), fixed before any evaluation run: docs/replay.md "Session 8"
        DebianCorpus(
            name="python-gevent-doc",
            package="python-gevent-doc",
            root=DOC_ROOT / "python-gevent-doc" / "html",
            base_url="http://gevent.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-cherrypy3-doc",
            package="python-cherrypy3-doc",
            root=DOC_ROOT / "python-cherrypy3-doc" / "html",
            base_url="http://cherrypy.docs.local/",
            experiment=True,
        ),
        # holdout-5 (session 9), fixed before any evaluation run: docs/replay.md "Session 9"
        DebianCorpus(
            name="python-pil-doc",
            package="python-pil-doc",
            root=DOC_ROOT / "python-pil-doc" / "html",
            base_url="http://pillow.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="sphinx-doc",
            package="sphinx-doc",
            root=DOC_ROOT / "sphinx-doc" / "html",
            base_url="http://sphinx.docs.local/",
            experiment=True,
        ),
        # holdout-6 (session 10), fixed before any evaluation run: docs/replay.md "Session 10"
        DebianCorpus(
            name="python-dask-doc",
            package="python-dask-doc",
            root=DOC_ROOT / "python-dask-doc" / "html",
            base_url="http://dask.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-fonttools-doc",
            package="python-fonttools-doc",
            root=DOC_ROOT / "fonttools" / "html",  # the package installs its tree under fonttools/
            base_url="http://fonttools.docs.local/",
            experiment=True,
        ),
        # holdout-7 (session 10), fixed before any design work of session 10: docs/replay.md "Session 10"
        DebianCorpus(
            name="python-pygame-doc",
            package="python-pygame-doc",
            root=DOC_ROOT / "python-pygame-doc" / "html",
            base_url="http://pygame.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-flask-doc",
            package="python-flask-doc",
            root=DOC_ROOT / "python-flask-doc" / "html",
            base_url="http://flask.docs.local/",
            experiment=True,
        ),
        # holdout-8 (session 11), fixed before any design work of session 11 that could ship: docs/replay.md
        # "Session 11"
        DebianCorpus(
            name="python-cryptography-doc",
            package="python-cryptography-doc",
            root=DOC_ROOT / "python-cryptography-doc" / "html",
            base_url="http://cryptography.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-lxml-doc",
            package="python-lxml-doc",
            root=DOC_ROOT / "python-lxml" / "html",  # the package installs its tree under python-lxml/
            base_url="http://lxml.docs.local/",
            experiment=True,
        ),
        # holdout-9 (session 11), fixed after holdout-8's single run, for the next robot: docs/replay.md
        DebianCorpus(
            name="python-werkzeug-doc",
            package="python-werkzeug-doc",
            root=DOC_ROOT / "python-werkzeug-doc" / "html",
            base_url="http://werkzeug.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-ipython-doc",
            package="python-ipython-doc",
            root=DOC_ROOT / "python-ipython-doc" / "html",
            base_url="http://ipython.docs.local/",
            experiment=True,
        ),
        # holdout-10 (session 13), fixed after holdout-9's single run, before any design work: docs/replay.md
        DebianCorpus(
            name="python-djangorestframework-doc",
            package="python-djangorestframework-doc",
            root=DOC_ROOT / "python3-djangorestframework" / "html",  # MkDocs: one folder per page
            base_url="http://drf.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-h5py-doc",
            package="python-h5py-doc",
            root=DOC_ROOT / "python-h5py-doc" / "html",
            base_url="http://h5py.docs.local/",
            experiment=True,
        ),
        # holdout-11 (session 14), fixed after holdout-10's single run, before any design work: docs/replay.md
        DebianCorpus(
            name="python-aiohttp-doc",
            package="python-aiohttp-doc",
            root=DOC_ROOT / "python-aiohttp-doc" / "html",
            base_url="http://aiohttp.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-tables-doc",
            package="python-tables-doc",
            root=DOC_ROOT / "python-tables-doc" / "html",
            base_url="http://pytables.docs.local/",
            experiment=True,
        ),
        # holdout-12 (session 15), fixed after holdout-11's single run, before any design work: docs/replay.md
        DebianCorpus(
            name="python-authlib-doc",
            package="python-authlib-doc",
            root=DOC_ROOT / "python-authlib-doc" / "html",
            base_url="http://authlib.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-ezdxf-doc",
            package="python-ezdxf-doc",
            root=DOC_ROOT / "python-ezdxf-doc" / "html",
            base_url="http://ezdxf.docs.local/",
            experiment=True,
        ),
        # holdout-13 (session 16), fixed after holdout-12's single run, before any design work: docs/replay.md
        DebianCorpus(
            name="python-quart-doc",
            package="python-quart-doc",
            root=DOC_ROOT / "python-quart-doc" / "html",
            base_url="http://quart.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-gitlab-doc",
            package="python-gitlab-doc",
            root=DOC_ROOT / "python-gitlab-doc" / "html",
            base_url="http://python-gitlab.docs.local/",
            experiment=True,
        ),
        # holdout-14 (session 17), fixed after holdout-13's single run, before any design work: one large web
        # (scikit-learn, 947 reachable pages) and one mid-sized (SymPy, 276): docs/replay.md
        DebianCorpus(
            name="python-sklearn-doc",
            package="python-sklearn-doc",
            root=DOC_ROOT / "python-sklearn-doc" / "html",
            base_url="http://scikit-learn.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-sympy-doc",
            package="python-sympy-doc",
            root=DOC_ROOT / "python-sympy-doc" / "html",
            base_url="http://sympy.docs.local/",
            experiment=True,
        ),
        # holdout-15 (session 17), fixed after holdout-14's single run, before any design work: one large web
        # (astropy, 1,544 reachable pages) and one mid-sized (scikit-image, 173): docs/replay.md
        DebianCorpus(
            name="python-astropy-doc",
            package="python-astropy-doc",
            root=DOC_ROOT / "python-astropy-doc" / "html",
            base_url="http://astropy.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-skimage-doc",
            package="python-skimage-doc",
            root=DOC_ROOT / "python-skimage-doc" / "html",
            base_url="http://scikit-image.docs.local/",
            experiment=True,
        ),
        # holdout-16 (session 18), fixed after holdout-15's single run, before any design work: one mid-sized
        # web (ASE, 368 reachable pages) and one small (NiBabel, 127): docs/replay.md
        DebianCorpus(
            name="python-ase-doc",
            package="python-ase-doc",
            root=DOC_ROOT / "python-ase-doc" / "html",
            base_url="http://ase.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-nibabel-doc",
            package="python-nibabel-doc",
            root=DOC_ROOT / "python-nibabel-doc" / "html",
            base_url="http://nibabel.docs.local/",
            experiment=True,
        ),
        # holdout-17 (session 19), fixed after holdout-16's single run, before any design work: one large web
        # (statsmodels, 6,242 reachable pages) and one small (MDTraj, 125): docs/replay.md
        DebianCorpus(
            name="python-statsmodels-doc",
            package="python-statsmodels-doc",
            root=DOC_ROOT / "python-statsmodels-doc" / "html",
            base_url="http://statsmodels.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-mdtraj-doc",
            package="python-mdtraj-doc",
            root=DOC_ROOT / "python-mdtraj-doc" / "html",
            base_url="http://mdtraj.docs.local/",
            experiment=True,
        ),
        # holdout-18 (session 19), fixed after holdout-17's single run, before any further design work: one
        # mid-sized web (MDAnalysis, 307 reachable pages) and one small (Whoosh, 61): docs/replay.md
        DebianCorpus(
            name="python-mdanalysis-doc",
            package="python-mdanalysis-doc",
            root=DOC_ROOT / "python-mdanalysis-doc" / "html",
            base_url="http://mdanalysis.docs.local/",
            experiment=True,
        ),
        DebianCorpus(
            name="python-whoosh-doc",
            package="python-whoosh-doc",
            root=DOC_ROOT / "python-whoosh-doc" / "html",
            base_url="http://whoosh.docs.local/",
            experiment=True,
        ),
    )
}
ALL = "all"


class CorpusNotInstalled(CorpusError):
    """A known Debian documentation corpus is not installed on this machine."""


def known_path_map() -> dict[str, str]:
    """Filesystem prefix -> base URL for every known corpus (roots and aliases)."""
    mapping: dict[str, str] = {}
    for c in DEBIAN_CORPORA.values():
        for prefix in (str(c.root), *c.aliases):
            mapping[prefix] = c.base_url
    return mapping


def require_installed(name: str) -> DebianCorpus:
    if name not in DEBIAN_CORPORA:
        raise CorpusError(f"unknown Debian corpus {name!r}; known: {', '.join([*DEBIAN_CORPORA, ALL])}")
    corpus = DEBIAN_CORPORA[name]
    if not corpus.installed:
        raise CorpusNotInstalled(
            f"Debian corpus {name!r} is not installed: {corpus.root / corpus.seed} not found "
            f"(install it with: apt-get install {corpus.package})"
        )
    return corpus


def debian_corpus(name: str) -> Corpus:
    """Load an installed Debian documentation corpus by name (see the module table), or ``all`` of them
    as one web of three hosts (the experiment corpora are not in it). Raises :class:`CorpusNotInstalled`
    with the apt-get command if absent."""
    if name == ALL:
        known = [require_installed(n) for n, c in DEBIAN_CORPORA.items() if not c.experiment]
        return load_multi_host(
            [(c.root, c.base_url) for c in known], path_map=known_path_map(), name="debian:all"
        )
    c = require_installed(name)
    return load_html_tree(c.root, c.base_url, [c.seed], path_map=known_path_map(), name=f"debian:{name}")
