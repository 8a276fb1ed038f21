"""The frontmatter fast path reads what PyYAML reads, or hands the block to PyYAML (property test)."""

from __future__ import annotations

import datetime as dt

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.plugins.memory.collections.markdown import simple_yaml, split_frontmatter

keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
atoms = st.one_of(
    st.from_regex(r"[A-Za-z0-9 ._()/+-]{1,12}", fullmatch=True).map(str.strip).filter(bool),
    st.integers(-10**6, 10**6).map(str), st.sampled_from(["true", "false", "null", "~", "1.5", "-0.25"]),
    st.from_regex(r"[A-Za-z0-9 ,:#'-]{0,10}", fullmatch=True).map(lambda s: '"' + s + '"'),
)
values = st.one_of(atoms, st.lists(atoms, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"))


def _plain(value):  # YAML reads dates as dates; the note keeps their text either way
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, values, min_size=1, max_size=6))
def test_fast_path_agrees_with_pyyaml(pairs: dict[str, str]) -> None:
    block = "\n".join(f"{k}: {v}" for k, v in pairs.items())
    try:
        expected = yaml.safe_load(block)
    except yaml.YAMLError:
        expected = None
    try:
        fast = simple_yaml(block)
    except ValueError:
        fast = None  # PyYAML decides
    if fast is not None:
        assert isinstance(expected, dict)
        assert fast == {k: _plain(v) if not isinstance(v, list) else [_plain(x) for x in v]
                        for k, v in expected.items()}
    front, body = split_frontmatter(f"---\n{block}\n---\nbody")
    if isinstance(expected, dict):
        assert body == "body"
        assert {k: str(v) for k, v in front.items()} == {str(k): str(v) for k, v in expected.items()}  # keys are text


def test_a_key_yaml_reads_as_a_bool_or_null_goes_to_pyyaml() -> None:
    for block in ("ON: 0", "True: /", "null: x", "off: [a]"):
        try:
            simple_yaml(block)
        except ValueError:
            continue
        raise AssertionError(f"the fast path read {block!r} itself")
    assert split_frontmatter("---\nON: 0\ntitle: x\n---\nbody") == ({"True": 0, "title": "x"}, "body")
