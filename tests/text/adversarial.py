"""Hand-written texts that trip tokenizers which are not exactly BERT's (see test_parity.py)."""

ADVERSARIAL_TEXTS = [
    # Accents, case and compatibility forms.
    "Café naïve résumé Ångström Zoë façade",
    "cafe\u0301 (combining acute) vs café (precomposed)",
    "Straße, Maß und Fuß: ß stays ß, ẞ lowercases to ß",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３！",
    "ﬁnance ﬂow ﬀ ligatures; Ⅻ ² ½ ℌ ㎏",
    "ΟΔΟΣ ΟΔΟΣ. Σίσυφος ΣΑΣ",
    "İstanbul IĞDIR ı i̇",
    "ǅemal ǈ ǋ titlecase digraphs",
    "Ⱥ ⱥ Ȿ ɐ Ꞵ new case pairs",
    # Replacement, control and format characters.
    "bad \ufffd byte",
    "nul\x00inside and vt\x0bjoin and ff\x0cjoin and nel\x85join",
    "zero\u200bwidth zero\u200djoiner soft\u00adhyphen bom\ufeffmark lrm\u200emark",
    "bidi \u202aembed\u202c isolate \u2066x\u2069 arabic\u0600mark",
    "private \ue000use and tag \U000e0041 chars",
    "tab\tnewline\ncarriage\rreturn  nbsp\u00a0thin\u2009ideo\u3000line\u2028para\u2029end",
    # Scripts.
    "中文字符和日本語の漢字、한국어 텍스트",
    "CJK ext 𠀀𪜀 compat 豈 compat-supp 丽 and 𫠠𬺡",
    "हिन्दी में लिखा गया पाठ क्षत्रिय",
    "مرحبا بالعالم! שלום עולם?",
    "ไทย ภาษา ບາລີ ျမန်မာ",
    "Ελληνικά, русский, ქართული, Հայերեն",
    # Emoji and symbols.
    "emoji 😀👍🏽 👨‍👩‍👧 🥰🫠 flags 🇩🇪",
    "math ∀x∈ℝ: x² ≥ 0, ≠ ≮ ≯ ≤ ∑∫",
    "varia \u1fef and \u1fee \u1fed oxia\u1ffd",
    "quotes “double” ‘single’ «guillemets» „low“ — dash – ‐",
    "unassigned \u0378 and newer \u1abf \u0890 marks",
    # Unicode 13-16 letters that TensorFlow's ICU decomposes and `tokenizers` does not.
    "todhri \U000105c9 tulu \U00011383 dives \U00011938 kirat \U00016d68 gurung \U00016121",
    # Special tokens.
    "the [MASK] sat on the [mask]",
    "[CLS] text [SEP] more [SEP][PAD][UNK]",
    "x[MASK]y [MASK]. [ MASK ] [MASK",
    # Long words: over 100 characters in 1-, 2-, 3- and 4-byte scripts, and exactly 100.
    "a" * 100 + " " + "b" * 101,
    "é" * 100 + " " + "é" * 101,
    "Ж" * 101 + " ok " + "ж" * 99,
    "中" * 150,
    "字" + "ก" * 100,
    "😀" * 101,
    "e\u0301" * 60,
    # Punctuation and digits.
    "U.S.A. e-mail co-operate don't 3.14 1,000,000 $5 @user #tag http://x.org/a?b=c",
    "....!!!???---___***",
    "",
    "   \t\n  ",
    "\x00\x0b\u200b",
]
