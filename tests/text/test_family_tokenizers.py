"""The family's in-graph tokenizers give the ids of their reference libraries: `tokenizers`
(the byte-level BPE of RoBERTa and ModernBERT, ModernBERT's read from its `tokenizer.json` with
its added tokens' flags, and XLM-RoBERTa's unigram model) and `sentencepiece` with the models'
original preprocessing (ALBERT, DeBERTa-v3; XLM-RoBERTa's under fairseq's ids), on every
sentence of shared/data and on fuzzed Unicode and bytes."""

import io
import json

import pytest
import sentencepiece
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

import keras_bert
from keras_bert.text import BytePairTokenizer, SentencePieceTokenizer
from tests.conftest import reference_outputs
from tests.text.family_references import (
    TOKENIZER_JSON_FAMILIES,
    FamilyReference,
    albert_encode_ids,
)

FAMILIES = ("roberta", "albert", "deberta_v3", "modernbert", "xlm_roberta")


@pytest.fixture(scope="module")
def tokenizers(reference_dir):
    """`tokenizer(name)`: a family's in-graph tokenizer, built once a module."""
    built = {}

    def tokenizer(name: str):
        if name not in built:
            checkpoint = reference_dir / "variants" / name
            built[name] = keras_bert.load_preprocessor(checkpoint).tokenizer
        return built[name]

    return tokenizer


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, reference_dir, tokenizers):
    """(name, in-graph tokenizer, reference) of each family."""
    checkpoint = reference_dir / "variants" / request.param
    return request.param, tokenizers(request.param), FamilyReference(request.param, checkpoint)


@pytest.fixture(scope="module")
def corpus_ids(corpus_sentences, tokenizers):
    """`ids(name)`: a family's in-graph ids of every shared sentence, computed once a module."""
    computed = {}

    def ids(name: str) -> list[list[int]]:
        if name not in computed:
            computed[name] = _ids(tokenizers(name), corpus_sentences)
        return computed[name]

    return ids


def _ids(tokenizer, texts) -> list[list[int]]:
    return tokenizer(tf.constant(texts, tf.string)).to_list()


@pytest.mark.slow
def test_ids_equal_the_reference_on_every_shared_sentence(family, corpus_sentences, corpus_ids):
    name, _, reference = family
    ours, expected = corpus_ids(name), reference.encode(corpus_sentences)
    wrong = [index for index in range(len(expected)) if ours[index] != expected[index]]
    assert not wrong, [(corpus_sentences[i], ours[i], expected[i]) for i in wrong[:3]]


def test_singles_equal_the_sentencepiece_reference_ids(family, reference_dir):
    name, tokenizer, _ = family
    archive = reference_outputs(reference_dir, name)
    key = "singles_input_ids" if name in TOKENIZER_JSON_FAMILIES else "singles_original_input_ids"
    texts = json.loads(str(archive["texts_json"]))["singles"]
    for ids, row, mask in zip(
        _ids(tokenizer, texts), archive[key], archive["singles_attention_mask"], strict=True
    ):
        assert ids == row[1 : mask.sum() - 1].tolist()


TRICKY_TEXTS = [
    "",
    " ",
    "   leading, inner   and trailing   ",
    "it's 'sup? They'll've \n\n\t x",
    "path.... and ......",
    # Segmentations of equal score, chosen by the float32 rounding of sentencepiece's running
    # sum (ALBERT splits "---" two ways in the third).
    "Mmmm",
    "---------------------",
    "Duluth 5.06 up .02 --- --- -- --",
    "Ｆｕｌｌｗｉｄｔｈ ﬁne ①② ℌ",
    "Σίσυφος ΑΣ İstanbul straße Ǆ",
    "a\x00b \x00",
    "``quoted'' and \"quoted\"",
    "1,000 and 1990, 2000,",
    "<s> <mask> </s><pad>",
    "[CLS]a  [MASK]\t[SEP]\u3000[PAD]x[UNK][MASK",
    "\u3000\u2028\u200b\ufeff\U0001f600 \u0301a",
]


def test_ids_equal_the_reference_on_tricky_texts(family):
    _, tokenizer, reference = family
    assert _ids(tokenizer, TRICKY_TEXTS) == reference.encode(TRICKY_TEXTS)


@settings(max_examples=settings.default.max_examples // 4)
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=8))
def test_fuzzed_unicode_gives_the_reference_ids(family, texts):
    _, tokenizer, reference = family
    assert _ids(tokenizer, texts) == reference.encode(texts)


@settings(max_examples=settings.default.max_examples // 4)
@given(data=st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_fuzzed_bytes_give_the_ids_of_their_replaced_decoding(family, data):
    _, tokenizer, reference = family
    expected = reference.encode([raw.decode("utf-8", errors="replace") for raw in data])
    assert _ids(tokenizer, data) == expected


def test_albert_resplits_digit_comma_pieces_as_google_research_does(tmp_path, data_dir):
    # A model trained with numbers glued to commas has "1990,"-like pieces to re-split.
    lines = (data_dir / "pretraining" / "wikipedia_sample.txt").read_text().splitlines()[:3000]
    lines += ["In 1990, 2000, 2010, and 1,000, 25,000 people came."] * 200
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=1200,
        split_by_number=False,
        control_symbols=["[CLS]", "[SEP]"],
        minloglevel=2,
    )
    processor = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    pieces = [processor.id_to_piece(index) for index in range(processor.get_piece_size())]
    assert any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces)
    tokenizer = SentencePieceTokenizer(model.getvalue(), albert_preprocessing=True)
    texts = ["In 1990, 2000, 2010, and 1,000, 25,000 people came.", "x1990, 7,", "1990,"]
    assert _ids(tokenizer, texts) == [albert_encode_ids(processor, text) for text in texts]
    assert _ids(tokenizer, texts) != processor.encode(texts)


@pytest.fixture(scope="module")
def xlm_roberta(reference_dir, tokenizers):
    """(in-graph tokenizer, sentencepiece processor, visible-sentence archive) of XLM-R."""
    processor = sentencepiece.SentencePieceProcessor(
        model_file=str(reference_dir / "variants" / "xlm_roberta" / "sentencepiece.bpe.model")
    )
    archive = reference_outputs(reference_dir, "xlm_roberta")
    return tokenizers("xlm_roberta"), processor, archive


def test_xlm_roberta_ids_equal_transformers_on_lines_in_ten_scripts(xlm_roberta):
    tokenizer, _, archive = xlm_roberta
    texts = json.loads(str(archive["texts_json"]))["multilingual"]
    rows = zip(
        archive["multilingual_input_ids"], archive["multilingual_attention_mask"], strict=True
    )
    assert _ids(tokenizer, texts) == [row[1 : mask.sum() - 1].tolist() for row, mask in rows]


def _fairseq_ids(processor: sentencepiece.SentencePieceProcessor, text: str) -> list[int]:
    """`sentencepiece`'s ids of a text under fairseq's dictionary (pieces one id later, its
    `<unk>` 3)."""
    return [piece_id + 1 if piece_id else 3 for piece_id in processor.encode(text)]


@pytest.mark.slow
def test_xlm_roberta_ids_are_sentencepiece_pieces_on_every_shared_sentence(
    xlm_roberta, corpus_sentences, corpus_ids
):
    """The same ids as `sentencepiece` under fairseq's offset, but for equally scored
    segmentations, which `tokenizers` orders otherwise ("very...." is "." "...", not "..." ".")."""
    _, processor, _ = xlm_roberta
    ours = corpus_ids("xlm_roberta")
    differ = [
        (text, ids, _fairseq_ids(processor, text))
        for text, ids in zip(corpus_sentences, ours, strict=True)
        if ids != _fairseq_ids(processor, text)
    ]
    assert len(differ) < len(corpus_sentences) // 10_000
    assert all(sorted(ids) == sorted(expected) for _, ids, expected in differ), differ


def test_xlm_roberta_follows_tokenizers_where_sentencepiece_differs(xlm_roberta, reference_dir):
    """NFKC by grapheme cluster ("ﬁ" + U+0301 loses the accent with its cluster), White_Space
    that the normalizer keeps (U+0085), a special piece that NFKC makes (fullwidth "＜ｓ＞")."""
    tokenizer, processor, _ = xlm_roberta
    reference = FamilyReference("xlm_roberta", reference_dir / "variants" / "xlm_roberta")
    texts = ["ﬁ\u0301x", "a\x85b", "＜ｓ＞ and <mask>"]
    ours = _ids(tokenizer, texts)
    assert ours == reference.encode(texts)
    assert all(ids != _fairseq_ids(processor, text) for ids, text in zip(ours, texts, strict=True))


# ModernBERT's tokenizer.json with the added tokens of the published vocabularies it descends
# from (GPT-NeoX, OLMo): "[MASK]" takes the whitespace before it, "[SEP]" the one after it,
# runs of spaces are tokens of their own matched after the others, and an "<|endoftext|>"
# outside the BPE vocabulary; with and without their NFC normalizer.
EXTRA_ADDED_TOKENS = [
    {"content": " " * width, "normalized": True, "special": False} for width in (2, 3, 4, 8)
] + [{"content": "<|endoftext|>", "normalized": False, "special": True}]
ADDED_TOKEN_PIECES = [
    "a", "it's", "12", " ", "  ", "\t", "\n", "\u3000", "\u00a0", "é", "😀", "[MASK]",
    "[SEP]", "[CLS]", "[PAD]", "<|endoftext|>", "<|endof", "[MA", "SK]", "x",
    "e\u0301", "\u0301", "\u0338", "A\u030a", "\u212b", "\u1100\u1161", "ﬁ",
]  # fmt: skip


@pytest.fixture(scope="module", params=[None, {"type": "NFC"}], ids=["no normalizer", "NFC"])
def flagged_tokenizer_json(request, reference_dir, tmp_path_factory):
    """The path of ModernBERT's tokenizer.json with `EXTRA_ADDED_TOKENS`, strip flags and
    the normalizer of the parameter."""
    values = json.loads((reference_dir / "variants" / "modernbert" / "tokenizer.json").read_text())
    values["normalizer"] = request.param
    for token in values["added_tokens"]:
        token["lstrip"] = token["content"] == "[MASK]"
        token["rstrip"] = token["content"] == "[SEP]"
    next_id = len(values["model"]["vocab"])
    for index, token in enumerate(EXTRA_ADDED_TOKENS):
        flags = {"single_word": False, "lstrip": False, "rstrip": False}
        values["added_tokens"].append({"id": next_id + index, **flags, **token})
    path = tmp_path_factory.mktemp("flagged") / "tokenizer.json"
    path.write_text(json.dumps(values, ensure_ascii=False))
    return path


@pytest.fixture(scope="module")
def flagged_tokenizers(flagged_tokenizer_json):
    """(ours, its `tokenize_with_offsets` traced once, `tokenizers`' tokenizer) of
    `flagged_tokenizer_json`."""
    from tokenizers import Tokenizer

    ours = BytePairTokenizer.from_tokenizer_json(flagged_tokenizer_json)
    with_offsets = tf.function(
        ours.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    return ours, with_offsets, Tokenizer.from_file(str(flagged_tokenizer_json))


@settings(max_examples=settings.default.max_examples // 2)
# A token whose last character composes with the mark after it ("≯"): NFC stays inside a part.
@example(texts=["<|endoftext|>\u0338 [MASK]\u0301", "[SEP]  e\u0301 x"])
@given(
    texts=st.lists(
        st.lists(st.sampled_from(ADDED_TOKEN_PIECES), max_size=12).map("".join),
        min_size=1,
        max_size=8,
    )
)
def test_added_tokens_strip_and_match_as_tokenizers_does(flagged_tokenizers, texts):
    _, with_offsets, theirs = flagged_tokenizers
    encodings = theirs.encode_batch(texts, add_special_tokens=False)
    ids, starts, ends = (values.to_list() for values in with_offsets(tf.constant(texts)))
    assert ids == [encoding.ids for encoding in encodings]
    # An added token spans what it matched (bytes), the whitespace it strips included.
    added = set(theirs.get_added_tokens_decoder())
    for text, encoding, row_starts, row_ends in zip(texts, encodings, starts, ends, strict=True):
        for token, (start, end), ours in zip(
            encoding.ids, encoding.offsets, zip(row_starts, row_ends, strict=True), strict=True
        ):
            if token in added:
                assert ours == (len(text[:start].encode()), len(text[:end].encode())), text


def test_added_tokens_of_the_flagged_vocabulary_on_examples(flagged_tokenizers):
    ours, _, _ = flagged_tokenizers
    tokens = ours.id_to_token(ours(["a  [MASK] b", "[SEP]  x", "a     b"])).to_list()
    assert tokens == [
        [b"a", b"[MASK]", b"\xc4\xa0b"],
        [b"[SEP]", b"x"],
        [b"a", b"    ", b"\xc4\xa0b"],
    ]


@pytest.mark.parametrize("merge", ["Ġ t h", "Ġt"])
def test_a_merge_of_other_than_two_tokens_is_refused(merge, reference_dir, tmp_path):
    values = json.loads((reference_dir / "variants" / "modernbert" / "tokenizer.json").read_text())
    values["model"]["merges"][0] = merge
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(values))
    with pytest.raises(keras_bert.ConfigError, match="a merge of tokens with spaces"):
        BytePairTokenizer.from_tokenizer_json(path)
