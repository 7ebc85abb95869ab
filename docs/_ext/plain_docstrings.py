"""Read fastsd's docstrings as the plain text they are written in.

The docstrings are written for ``help()`` at the terminal and use the field's plain-text
notation: ``|x|`` is a norm, ``|v1.v2|`` an absolute value, ``(m, *shape)`` a shape. In
reStructuredText a pair of bars is a substitution reference and a star opens emphasis, so
Sphinx would report "Undefined substitution" or an unclosed emphasis and garble the text.
Before numpydoc reads a docstring, this extension escapes every bar, and every star that
opens no emphasis, outside code (inline literals, roles, literal blocks, directives' content
and doctests), so the page shows what ``help()`` shows. Stars that close on their line are
left as emphasis.
"""
import re

#: Inline spans left as they are: ``literal``, `interpreted` and :role:`text`.
_CODE = re.compile(r"(``.+?``|(?::[\w:+-]+:)?`[^`]+`_{0,2})")


#: A star that would open emphasis but has no closing star after it on the line, as in
#: ``shape (m, *image_shape)``: plain text, not markup.
_LONE_STAR = re.compile(r"(?<![\w*\\])\*(?=[\w(])(?![^*]*\*(?:[\s.,;:)]|$))")


def _escape(text):
    """``text`` with every ``|``, and every star that opens no emphasis, outside inline code
    spans escaped."""
    parts = _CODE.split(text)
    return "".join(p if i % 2 else _LONE_STAR.sub(r"\\*", p.replace("|", r"\|"))
                   for i, p in enumerate(parts))


def escape_markup(lines):
    """Escape the bars and lone stars of a docstring's lines in place (see the module's
    docstring)."""
    block_indent = None         # the indent a literal block or directive's content is under
    doctest = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not stripped or indent > block_indent:
                continue
            block_indent = None
        if doctest:
            if stripped:
                continue
            doctest = False
        if stripped.startswith(">>>"):
            doctest = True
            continue
        if stripped.endswith("::") or stripped.startswith(".. "):
            block_indent = indent
        lines[i] = _escape(line)


def _process(app, what, name, obj, options, lines):
    escape_markup(lines)


def setup(app):
    """Run before numpydoc (priority 500) turns the sections into reST."""
    app.connect("autodoc-process-docstring", _process, priority=100)
    return {"parallel_read_safe": True}


def cli_parser():
    """``fastsd``'s argparse parser with its texts escaped as the docstrings are, for the CLI
    reference (sphinx-argparse reads descriptions, help and epilogs as reST)."""
    import argparse

    from fastsd.cli import build_parser

    def escape(parser):
        for attr in ("description", "epilog"):
            if getattr(parser, attr):
                setattr(parser, attr, _escape(getattr(parser, attr)))
        for action in parser._actions:
            if action.help and action.help is not argparse.SUPPRESS:
                action.help = _escape(action.help)
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    choice.help = _escape(choice.help) if choice.help else choice.help
                for sub in set(action.choices.values()):
                    escape(sub)
        return parser

    return escape(build_parser())
