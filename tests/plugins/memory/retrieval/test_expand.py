"""The rule-based expander, the provider contract, the 1-hour cache and graceful degrade."""

from __future__ import annotations

from plughost.plugins.memory.retrieval import expand


def test_rule_based_gives_up_to_five_paraphrases_offline():
    out = expand.rule_based("how do I contact the customer about the price")
    assert 1 <= len(out) <= 5
    assert "contact customer price" in out
    assert any("cost" in q for q in out) and any("client" in q for q in out)
    assert all(q != "how do i contact the customer about the price" for q in out)


def test_rule_based_is_deterministic_and_keeps_single_words_useful():
    assert expand.rule_based("invoices") == expand.rule_based("invoices")
    assert "invoice" in expand.rule_based("invoices")


def test_clean_drops_duplicates_the_query_and_caps_at_five():
    answer = ["A", "a", "query", "", 3, "b", "c", "d", "e", "f"]
    assert expand.clean("Query", answer) == ["A", "b", "c", "d", "e"]


def test_cache_keyed_by_account_query_class_for_one_hour():
    now = [0.0]
    cache = expand.ExpansionCache(clock=lambda: now[0])
    calls = []

    def provider(q, cls):
        calls.append((q, cls))
        return [q + " one", q + " two", q + " three"]

    assert expand.expansions("q", None, "acct1", provider, cache) == ["q one", "q two", "q three"]
    expand.expansions("q", None, "acct1", provider, cache)
    assert len(calls) == 1
    expand.expansions("q", "entity", "acct1", provider, cache)
    expand.expansions("q", None, "acct2", provider, cache)
    assert len(calls) == 3
    now[0] = 3599.0
    expand.expansions("q", None, "acct1", provider, cache)
    assert len(calls) == 3
    now[0] = 3600.0
    expand.expansions("q", None, "acct1", provider, cache)
    assert len(calls) == 4


def test_failing_provider_degrades_to_the_original_query_and_logs(capsys):
    cache = expand.ExpansionCache()

    def broken(q, cls):
        raise TimeoutError("llm down")

    assert expand.expansions("q", None, "a", broken, cache) == []
    assert "[graph-search:hybrid] warn reason=expansion-failed" in capsys.readouterr().err
    assert expand.expansions("q", None, "a", None, cache) == []
