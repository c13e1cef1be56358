"""`PrecompiledNormalizer` against `tokenizers`' `Precompiled`, code point by code point, and the
grapheme cluster rules it walks the text by."""

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import normalizers

from keras_bert.text.graphemes import grapheme_starts
from keras_bert.text.precompiled_normalizer import PrecompiledNormalizer, charsmap_rules
from keras_bert.text.sentencepiece_model import read_sentencepiece_proto
from tests.text.test_unicode_tables import CODE_POINTS

BATCH = 65_536


@pytest.fixture(scope="module")
def charsmap(reference_dir) -> bytes:
    """XLM-RoBERTa's `nmt_nfkc` rules."""
    model = reference_dir / "variants" / "xlm_roberta" / "sentencepiece.bpe.model"
    return read_sentencepiece_proto(model.read_bytes()).precompiled_charsmap


@pytest.fixture(scope="module")
def normalize(charsmap):
    normalizer = PrecompiledNormalizer(charsmap)

    def normalized(texts: list[str]) -> list[str]:
        results = []
        for start in range(0, len(texts), BATCH):
            code_points = tf.strings.unicode_decode(texts[start : start + BATCH], "UTF-8")
            points, _, _ = normalizer.normalize(code_points)
            results += [
                text.decode() for text in tf.strings.unicode_encode(points, "UTF-8").numpy()
            ]
        return results

    return normalized


@pytest.fixture(scope="module")
def reference(charsmap):
    return normalizers.Precompiled(charsmap).normalize_str


# Each line probes one rule of the clusters around code point c; a newline (a Control) ends
# every cluster. "\u00a0" is a key of its own, so it drops what joins it in a short cluster:
# - "\u00a0c": c is Extend, ZWJ or SpacingMark (GB9, GB9a);
# - "c\u00a0\u0301": c is Prepend (GB9b), so "\u00a0\u0301" is not a cluster of its own;
# - "‼c\u0301": a key followed by c, whose cluster keeps or loses the accent;
# - "c\u0301\u0302": c's own rules, and those of the keys c begins.
PROBES = "\u00a0{0}\n{0}\u00a0\u0301\n‼{0}\u0301\n{0}\u0301\u0302"


@pytest.mark.slow
def test_every_code_point_normalizes_as_tokenizers_does(normalize, reference):
    texts = [PROBES.format(chr(code_point)) for code_point in CODE_POINTS]
    ours = normalize(texts)
    wrong = [
        f"U+{code_point:04X}"
        for code_point, text, result in zip(CODE_POINTS, texts, ours, strict=True)
        if result != reference(text)
    ]
    assert not wrong, wrong[:20]


@pytest.mark.parametrize(
    "text",
    [
        "ﬁ\u0301x",  # a key and an accent in one short cluster: replaced whole
        "e\u0301 e\u0301\u0301\u0301",  # a key of two code points; its cluster of 8 bytes is not
        "\r\n\u3000\u00a8",  # CR LF one cluster; ¨ becomes a space and a combining mark
        "क्\u0958\u0301",  # GB9c: the consonant joins the conjunct, its accent is kept
        "©\u200d‼\u0301",  # GB11: the emoji joins the ZWJ sequence, its accent is kept
        "\U000110bda\u00a0\u0301",  # a Prepend joins what follows
        "🇩🇪🇫\u00a0\u0301",  # regional indicators pair up
    ],
)
def test_cluster_rules_change_the_text_as_in_tokenizers(text, normalize, reference):
    assert normalize([text]) == [reference(text)]


def test_grapheme_clusters_of_uax_29_examples():
    texts = ["g\u0308", "\r\n", "\u1100\u1161\u11a8", "🇦🇧🇨", "👩\u200d💻a", "क्ष", "a\u0600b"]
    starts = grapheme_starts(tf.strings.unicode_decode(texts, "UTF-8")).to_list()
    assert starts == [
        [True, False],
        [True, False],
        [True, False, False],
        [True, False, True],
        [True, False, False, True],
        [True, False, False],
        [True, True, False],
    ]


@settings(max_examples=settings.default.max_examples // 2)
@given(texts=st.lists(st.text(max_size=24), min_size=1, max_size=8))
def test_fuzzed_text_normalizes_as_tokenizers_does(texts, normalize, reference):
    assert normalize(texts) == [reference(text) for text in texts]


def test_rules_are_the_charsmap_keys_shorter_than_a_whole_cluster(charsmap):
    rules = charsmap_rules(charsmap)
    assert all(len(key.encode()) < 6 for key in rules)
    assert rules["\u2581"] == " " and rules["\x0b"] == "" and rules["Ａ"] == "A"
    assert charsmap_rules(b"") == {}
