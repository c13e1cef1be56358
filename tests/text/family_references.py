"""The reference tokenizers of BERT's family, in plain Python: `tokenizers` for the byte-level
BPE of RoBERTa and ModernBERT and XLM-RoBERTa's unigram model (their `tokenizer.json`),
`sentencepiece` with each model's original preprocessing for ALBERT and DeBERTa-v3."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import sentencepiece
from tokenizers import Tokenizer

SPIECE_UNDERLINE = "\u2581"


def albert_preprocess_text(text: str, lower: bool = True) -> str:
    """google-research/albert `tokenization.preprocess_text`, with the `` and '' rule of
    XLNet's `prepro_utils` (and Hugging Face's ALBERT tokenizer)."""
    outputs = " ".join(text.strip().split())
    outputs = outputs.replace("``", '"').replace("''", '"')
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(char for char in outputs if not unicodedata.combining(char))
    return outputs.lower() if lower else outputs


def albert_encode_ids(model: sentencepiece.SentencePieceProcessor, text: str) -> list[int]:
    """google-research/albert `encode_ids` of preprocessed text: SentencePiece pieces, each
    "<digit>," piece re-encoded without its comma and "▁", then the comma."""
    pieces = []
    for piece in model.encode(text, out_type=str):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            split = model.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
            if piece[0] != SPIECE_UNDERLINE and split[0][0] == SPIECE_UNDERLINE:
                split = split[1:] if len(split[0]) == 1 else [split[0][1:], *split[1:]]
            pieces += [*split, piece[-1]]
        else:
            pieces.append(piece)
    return [model.piece_to_id(piece) for piece in pieces]


# The special tokens that Hugging Face's ALBERT and DeBERTa-v2 tokenizers match in the text.
SENTENCEPIECE_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>", "[PAD]", "[UNK]")
# The byte-level BPE families.
BYTE_PAIR_FAMILIES = ("roberta", "modernbert")
# The families whose reference is `tokenizers` with the checkpoint's `tokenizer.json`.
TOKENIZER_JSON_FAMILIES = (*BYTE_PAIR_FAMILIES, "xlm_roberta")


class FamilyReference:
    """`encode(texts)`: the reference ids of a family's tokenizer (no special tokens added).

    The SentencePiece families' special tokens written in the text are single tokens, the text
    between them encoded part by part, as Hugging Face's tokenizers do.
    """

    def __init__(self, family: str, checkpoint: Path):
        self.family = family
        if family in TOKENIZER_JSON_FAMILIES:
            self.tokenizer = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
            self.tokenizer.no_truncation()
            self.tokenizer.no_padding()
        else:
            model_file = "spiece.model" if family == "albert" else "spm.model"
            self.model = sentencepiece.SentencePieceProcessor(
                model_file=str(checkpoint / model_file)
            )
            self.special_ids = {
                token: self.model.piece_to_id(token)
                for token in SENTENCEPIECE_SPECIAL_TOKENS
                if self.model.id_to_piece(self.model.piece_to_id(token)) == token
            }

    def encode(self, texts: list[str]) -> list[list[int]]:
        if self.family in TOKENIZER_JSON_FAMILIES:
            encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
            return [encoding.ids for encoding in encodings]
        return [self._encode_sentencepiece(text) for text in texts]

    def _encode_sentencepiece(self, text: str) -> list[int]:
        pattern = "(" + "|".join(map(re.escape, self.special_ids)) + ")"
        ids = []
        for part in re.split(pattern, text) if self.special_ids else [text]:
            if part in self.special_ids:
                ids.append(self.special_ids[part])
            elif self.family == "albert":
                ids += albert_encode_ids(self.model, albert_preprocess_text(part))
            else:
                ids += self.model.encode(part)
        return ids
