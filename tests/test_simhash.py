"""SimHash fingerprints: stable, near for near texts, far for unrelated ones; the near-dup index."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import IN_CI
from harvestman import simhash as simhash_module
from harvestman.simhash import (
    COMPILED,
    MAX_DISTANCE,
    NearDuplicateIndex,
    from_signed64,
    hamming,
    simhash64,
    to_signed64,
)

_rng = random.Random(7)
VOCABULARY = sorted(
    {"".join(_rng.choices("abcdefghijklmnopqrstuvwxyz", k=_rng.randint(2, 9))) for _ in range(3000)}
)


def words(seed: int, count: int) -> list[str]:
    """``count`` words drawn from a 3,000-word vocabulary: a text unrelated to other seeds'."""
    rng = random.Random(seed)
    return [rng.choice(VOCABULARY) for _ in range(count)]


def test_fingerprints_are_pinned() -> None:
    # Stored fingerprints are compared with new ones: any change of these values is a migration.
    assert simhash64("The quick brown fox jumps over the lazy dog") == 0x7D62690FF9527534
    assert simhash64("Überschrift: Größe") == 0xF2023C75E78B32B3
    assert simhash64("hello") == 0x791444986747719C


def test_the_compiled_kernel_is_built() -> None:
    # `pip install -e .` compiles it wherever a C compiler is; the numpy fallback is for
    # installs without one, and would cost the crawl ~150 µs a page. CI has a compiler.
    message = "harvestman._simhash was not built: reinstall with a C compiler present"
    if not COMPILED and not IN_CI:
        pytest.skip(message)
    assert COMPILED, message


needs_kernel = pytest.mark.skipif(not COMPILED, reason="harvestman._simhash was not built")


@needs_kernel
def test_a_crawl_with_the_kernel_does_not_import_numpy() -> None:
    # numpy (its libraries and OpenBLAS's threads) is ~22 MB of a crawl's resident memory.
    code = "import sys, harvestman.crawl.crawler; print('numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "False\n"), result.stderr


# Words of every kind the kernel treats apart: short and long (over 8 and 16 bytes, where only
# the first and last 8 bytes count), upper case, digits, non-ASCII, lone surrogates.
_WORDS = st.sampled_from(
    ["a", "Bb", "hello", "Größe", "12345678", "abcdefghi", "abcdefghijklmnopqrstu",
     "日本語テキスト", "ÉTÉ", "x\ud800y", "Z9"]
)  # fmt: skip
_SEPARATORS = st.sampled_from([" ", ", ", "\n\t", "--", "_", "@", "[", "`", "{", "\0", "\x7f"])


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_WORDS, _SEPARATORS), max_size=600))
def test_the_kernel_gives_the_numpy_reference_values(parts: list[tuple[str, str]]) -> None:
    text = "".join(word + separator for word, separator in parts)
    utf8 = text.encode("utf-8", "surrogatepass")
    assert simhash64(text) == simhash_module._simhash64_numpy(utf8)


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=500))
def test_the_kernel_gives_the_numpy_reference_values_on_any_text(text: str) -> None:
    utf8 = text.encode("utf-8", "surrogatepass")
    assert simhash64(text) == simhash_module._simhash64_numpy(utf8)


def test_the_kernel_reads_any_buffer() -> None:
    assert simhash_module._simhash64_numpy(b"hello world") == simhash64("hello world")
    if COMPILED:
        from harvestman._simhash import simhash64_utf8

        assert simhash64_utf8(memoryview(b"hello world")) == simhash64("hello world")
        with pytest.raises(TypeError):
            simhash64_utf8("not bytes")


def test_another_process_computes_the_same_fingerprint() -> None:
    text = " ".join(words(1, 500))
    code = "import sys; from harvestman.simhash import simhash64; print(simhash64(sys.argv[1]))"
    out = subprocess.run(
        [sys.executable, "-c", code, text], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) == simhash64(text)


def test_case_punctuation_and_spacing_do_not_matter() -> None:
    assert simhash64("Hello, World! How are you?") == simhash64("hello world how\n\tare   YOU")
    assert simhash64("café au lait") == simhash64("Café, au lait.")
    assert simhash64("café au lait") != simhash64("cafe au lait")


@pytest.mark.parametrize(("text", "expected"), [("", 0), ("  ", 0), ("?! -- ...", 0), ("\0\0", 0)])
def test_a_text_without_words_is_zero(text: str, expected: int) -> None:
    assert simhash64(text) == expected


def test_one_or_two_words_are_one_feature() -> None:
    fingerprints = {simhash64(text) for text in ("hello", "hello world", "world", "world hello")}
    assert len(fingerprints) == 4
    assert 0 not in fingerprints


def test_words_are_told_apart_by_their_bytes_and_length() -> None:
    # Same first and last 8 bytes would collide; these differ within 16 bytes or in length.
    base = "alpha beta {} gamma delta epsilon"
    variants = ["international", "internationally", "internationalise", "programmers", "programmer"]
    assert len({simhash64(base.format(word)) for word in variants}) == len(variants)


def test_identical_texts_have_identical_fingerprints() -> None:
    text = " ".join(words(3, 2_000))
    assert simhash64(text) == simhash64(str(text))  # not the same object
    assert hamming(simhash64(text), simhash64(text + " ")) == 0


def test_one_word_changed_in_a_long_text_is_near() -> None:
    text = words(11, 2_000)
    changed = list(text)
    changed[1_000] = "changed"
    assert hamming(simhash64(" ".join(text)), simhash64(" ".join(changed))) <= MAX_DISTANCE


def test_one_word_changes_are_near_on_average() -> None:
    # SimHash is a sketch: a change moves each bit with a small probability, so a few in a
    # hundred one-word changes of a 2,000-word text land 4 or 5 bits away (measured: 2 of 50).
    distances = []
    for seed in range(50):
        text = words(seed, 2_000)
        changed = list(text)
        changed[seed * 37] = "changed"
        distances.append(hamming(simhash64(" ".join(text)), simhash64(" ".join(changed))))
    assert sum(d <= MAX_DISTANCE for d in distances) >= 45
    assert statistics.mean(distances) < 2
    assert max(distances) <= 6


def test_unrelated_texts_are_far() -> None:
    fingerprints = [simhash64(" ".join(words(seed, 1_000))) for seed in range(12)]
    distances = [hamming(a, b) for i, a in enumerate(fingerprints) for b in fingerprints[i + 1 :]]
    assert min(distances) >= 16
    assert 28 <= statistics.mean(distances) <= 36


def test_a_page_with_a_different_date_line_is_near() -> None:
    article = " ".join(words(21, 800))
    first = simhash64(f"Home News Sport Updated 3 March 2026 09:12 {article} Contact us")
    second = simhash64(f"Home News Sport Updated 4 March 2026 17:40 {article} Contact us")
    other = simhash64(f"Home News Sport Updated 3 March 2026 09:12 {' '.join(words(22, 800))}")
    assert hamming(first, second) <= MAX_DISTANCE
    assert hamming(first, other) > 10


def test_hamming_counts_differing_bits() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(2**64 - 1, 0) == 64
    assert hamming(-1, 0) == 64  # a signed value from the database is its 64 bits


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [(0, 0), (1, 1), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (2**64 - 1, -1)],
)
def test_signed64_round_trips(unsigned: int, signed: int) -> None:
    assert to_signed64(unsigned) == signed
    assert from_signed64(signed) == unsigned
    assert -(2**63) <= to_signed64(unsigned) < 2**63


def test_fingerprints_fit_a_signed_column() -> None:
    for seed in range(20):
        fingerprint = simhash64(" ".join(words(seed, 50)))
        assert 0 <= fingerprint < 2**64
        assert from_signed64(to_signed64(fingerprint)) == fingerprint


# -- the index ---------------------------------------------------------------------------------


def flip(fingerprint: int, *bits: int) -> int:
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


BASE = 0x0123_4567_89AB_CDEF


def test_the_index_finds_near_duplicates_and_not_others() -> None:
    index = NearDuplicateIndex()
    assert index.add("page-1", BASE) is None
    assert index.add("page-2", flip(BASE, 0, 17, 63)) == "page-1"  # 3 bits, 3 bands
    assert index.add("page-3", flip(BASE, 1, 2, 3)) == "page-1"  # 3 bits, one band
    assert index.add("page-4", flip(BASE, 0, 1, 2, 3)) is None  # 4 bits: not near
    assert index.add("page-5", BASE ^ (2**64 - 1)) is None
    assert len(index) == 3  # near-duplicates are not added: their original stands for them
    assert "page-2" not in index
    assert index.find(flip(BASE, 40)) == "page-1"
    assert index.find(flip(BASE, 1, 2, 3, 4, 5)) == "page-4"  # 3 bits away; page-1: 5


def test_every_fingerprint_within_three_bits_is_found() -> None:
    rng = random.Random(5)
    index = NearDuplicateIndex(max_docs=5_000)
    originals = {f"doc-{n}": rng.getrandbits(64) for n in range(2_000)}
    for doc_id, fingerprint in originals.items():
        assert index.add(doc_id, fingerprint) is None
    for doc_id, fingerprint in originals.items():
        bits = rng.sample(range(64), rng.randint(0, MAX_DISTANCE))
        assert index.find(flip(fingerprint, *bits)) == doc_id


def test_the_nearest_match_wins() -> None:
    index = NearDuplicateIndex()
    index.add("far", flip(BASE, 10, 20, 30, 40))
    index.add("farther", BASE ^ 0xFFFF_0000_0000_0000)
    index.add("near", flip(BASE, 50))
    assert index.add("new", flip(BASE, 10, 20, 30)) == "far"  # 1 bit from far, 4 from near
    assert index.add("new", BASE) == "near"


def test_re_adding_a_page_replaces_it() -> None:
    index = NearDuplicateIndex()
    index.add("page", BASE)
    assert index.add("page", flip(BASE, 5)) is None  # a re-crawl is not its own duplicate
    assert len(index) == 1
    assert index.find(flip(BASE, 5, 6, 7, 8)) == "page"  # 3 bits from the new fingerprint
    assert index.add("other", flip(BASE, 5, 9)) == "page"


def test_the_least_recently_used_page_is_forgotten() -> None:
    index = NearDuplicateIndex(max_docs=2)
    a, b, c = BASE, BASE ^ 0xFFFF_FFFF, BASE ^ 0xFFFF_FFFF_0000_0000
    index.add("a", a)
    index.add("b", b)
    assert index.add("a-copy", flip(a, 3)) == "a"  # a is used again: b is now the oldest
    index.add("c", c)
    assert "b" not in index
    assert index.find(b) is None
    assert index.find(a) == "a"
    assert index.find(c) == "c"
    assert len(index) == 2


def test_pages_sharing_bands_are_kept_apart_and_removed_cleanly() -> None:
    index = NearDuplicateIndex(max_docs=3)
    # All three share the low band (0xCDEF) but are far apart.
    fingerprints = {
        "x": 0x1111_2222_3333_CDEF,
        "y": 0x4444_5555_6666_CDEF,
        "z": 0x7777_8888_9999_CDEF,
    }
    for doc_id, fingerprint in fingerprints.items():
        assert index.add(doc_id, fingerprint) is None
    index.discard("y")
    assert index.find(fingerprints["y"]) is None
    assert index.find(flip(fingerprints["z"], 60)) == "z"
    index.add("w", 0xAAAA_BBBB_CCCC_CDEF)
    index.add("v", 0xDDDD_EEEE_FFFF_CDEF)  # evicts x
    assert "x" not in index
    assert index.find(fingerprints["x"]) is None
    assert [index.find(flip(f, 1)) for f in (0x7777_8888_9999_CDEF, 0xDDDD_EEEE_FFFF_CDEF)] == [
        "z",
        "v",
    ]


def test_a_smaller_distance_can_be_asked_for() -> None:
    index = NearDuplicateIndex(max_distance=1)
    index.add("a", BASE)
    assert index.add("b", flip(BASE, 1, 2)) is None
    assert index.add("c", flip(BASE, 9)) == "a"


@pytest.mark.parametrize(("max_docs", "max_distance"), [(0, 3), (10, 4), (10, -1)])
def test_impossible_settings_are_refused(max_docs: int, max_distance: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        NearDuplicateIndex(max_docs=max_docs, max_distance=max_distance)


def test_signed_fingerprints_from_the_database_are_accepted() -> None:
    index = NearDuplicateIndex()
    fingerprint = 2**64 - 2
    index.add("stored", to_signed64(fingerprint))
    assert index.add("fresh", fingerprint) == "stored"
