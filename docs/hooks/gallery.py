"""mkdocs hook: the gallery, one page per ``examples/`` folder, made when the site is built.

Each page is the example's README (what it shows, its commands), the output of those
commands, the plot ``nflow-sim plot`` draws of the diagram, the images the example's own
commands draw (a plot script), and the diagram itself. Nothing of it is committed: the
commands run here, each example in a scratch copy of its folder (they all write
``result.json``), the examples side by side on the machine's cores. A command that fails
fails the build, so a README whose command no longer works cannot be published.

The hook also fills the navigation: a nav section that lists a folder's index page
(``gallery/index.md``, ``blocks/README.md``, ``guide/index.md``) gets every other page of
that folder the nav does not list, in file order, so a new example, library page or guide
page appears without an edit of ``mkdocs.yml``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import commands
from mkdocs.structure.files import File
from mkdocs.structure.nav import Section
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FOLDER = "gallery"
INDEXES = ("index.md", "README.md")
PLOT = "signals.png"          # what the plot command draws, in the example's scratch folder


@dataclass
class Example:
    name: str
    readme: str
    diagram: dict
    outputs: list = field(default_factory=list)      # (command, stdout) of the README's commands
    images: dict = field(default_factory=dict)       # file name -> PNG bytes drawn by them
    plot: bytes = b""                                # what `nflow-sim plot` draws of the diagram

    @property
    def title(self) -> str:
        first = self.readme.lstrip().splitlines()[0]
        return first.lstrip("# ").strip() if first.startswith("#") else self.name

    @property
    def summary(self) -> str:
        """The README's first paragraph: what the example shows."""
        body = self.readme.lstrip().split("\n", 1)[1] if self.readme.lstrip().startswith("#") else self.readme
        return body.strip().split("\n\n")[0].replace("\n", " ")

    plot_command: str = ""


def examples() -> list[str]:
    return sorted(p.parent.name for p in EXAMPLES.glob("*/diagram.json"))


def run_example(name: str, scratch: Path) -> Example:
    """Run the README's commands and the plot command from a copy of the example's folder."""
    here = scratch / name
    shutil.copytree(EXAMPLES / name, here / "examples" / name)
    folder = here / "examples" / name
    example = Example(name, (folder / "README.md").read_text(), json.loads((folder / "diagram.json").read_text()))
    before = set(here.rglob("*.png"))
    for command in commands.commands(example.readme):
        example.outputs.append((command, _run(command, here, name)))
    example.outputs = [(command, out) for command, out in example.outputs if out]
    example.images = {p.name: p.read_bytes() for p in sorted(set(here.rglob("*.png")) - before)}
    if PLOT in example.images:
        raise RuntimeError(f"examples/{name}: its commands draw {PLOT}, the name of the gallery's plot")
    # the result the README's commands wrote, if any (not run again), else the diagram itself
    drawn_from = "result.json --diagram " if (here / "result.json").is_file() else ""
    example.plot_command = f"nflow-sim plot {drawn_from}examples/{name}/diagram.json -o {PLOT}"
    _run(example.plot_command, here, name)
    example.plot = (here / PLOT).read_bytes()
    return example


def _run(command: str, here: Path, name: str) -> str:
    """Run ``command`` from ``here``; its standard output, stripped."""
    done = commands.run(command, here)
    if done.returncode != 0:
        raise RuntimeError(f"examples/{name}: `{command}` failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout.strip()


def page(example: Example) -> str:
    readme = example.readme.lstrip()
    body = readme.split("\n", 1)[1] if readme.startswith("#") else readme
    lines = [f"# {example.title}", "", body.strip(), ""]
    if example.outputs:
        lines += ["## What the commands print", ""]
        for command, out in example.outputs:
            lines += ["```text", f"$ {command}", out, "```", ""]
    lines += ["## The plot", "", "Every recorded signal against time, the events as vertical lines:", "",
              "```sh", example.plot_command, "```", "", f"![{example.title}]({example.name}.png)", ""]
    for image in example.images:
        lines += [f"Drawn by the example's own script (`{image}`):", "",
                  f"![{example.title}: {image}]({example.name}-{image})", ""]
    blocks, wires = example.diagram.get("blocks", []), example.diagram.get("connections", [])
    text = json.dumps(example.diagram, indent=2)
    lines += ["## The diagram", "",
              f'??? note "`examples/{example.name}/diagram.json`: {len(blocks)} blocks, {len(wires)} connections"',
              "", "    ```json", *("    " + line for line in text.splitlines()), "    ```", ""]
    return "\n".join(lines)


def index(done: list) -> str:
    lines = ["# Gallery", "",
             "Every folder of `examples/` in the repository, with what it shows, the commands that run it "
             "and the plot of what it records. The pages and their plots are made when the site is built, "
             "by running those commands.", ""]
    for example in done:
        lines += [f"## [{example.title}]({example.name}.md)", "", example.summary, "",
                  f"[![{example.title}]({example.name}.png){{ width=\"480\" }}]({example.name}.md)", ""]
    return "\n".join(lines)


def gallery_files() -> dict:
    """src URI -> content (str or bytes) of every gallery file."""
    with tempfile.TemporaryDirectory(prefix="nflow-gallery-") as scratch:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            done = list(pool.map(lambda name: run_example(name, Path(scratch)), examples()))
    files: dict = {f"{FOLDER}/index.md": index(done)}
    for example in done:
        files[f"{FOLDER}/{example.name}.md"] = page(example)
        files[f"{FOLDER}/{example.name}.png"] = example.plot
        for image, data in example.images.items():
            files[f"{FOLDER}/{example.name}-{image}"] = data
    return files


# ----------------------------------------------------------------------------- mkdocs events

def on_files(files, config):
    for uri, content in gallery_files().items():
        files.append(File.generated(config, uri, content=content))
    return files


def on_nav(nav, config, files):
    listed = {page.file.src_uri for page in nav.pages}
    for section in _sections(nav.items):
        folder = next((child.file.src_uri.rsplit("/", 1)[0] for child in section.children
                       if isinstance(child, Page) and child.file.src_uri.endswith(tuple(f"/{i}" for i in INDEXES))),
                      None)
        if folder is None:
            continue
        for file in sorted(files.documentation_pages(), key=lambda f: f.src_uri):
            if file.src_uri.rsplit("/", 1)[0] == folder and file.src_uri not in listed and file.page is not None:
                file.page.parent = section
                section.children.append(file.page)
                listed.add(file.src_uri)
    nav.pages = list(_pages(nav.items))
    for before, after in zip(nav.pages, nav.pages[1:]):
        before.next_page, after.previous_page = after, before
    return nav


def _sections(items):
    for item in items:
        if isinstance(item, Section):
            yield item
            yield from _sections(item.children)


def _pages(items):
    for item in items:
        if isinstance(item, Page):
            yield item
        elif isinstance(item, Section):
            yield from _pages(item.children)
