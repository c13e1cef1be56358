"""Where transformers' outputs for each reference checkpoint of `shared/reference/variants` are."""

from pathlib import Path


def variant_reference_file(reference_dir: Path, variant: str) -> Path:
    """The `.npz` of transformers' outputs for a variant directory (`roberta`,
    `electra/discriminator`, ...): `<name>_visible_sentences_reference.npz`, or the second
    wave's `<name>_visible_sentences_family2_reference.npz`, the name's "/" written "_".

    Example:
    >>> variant_reference_file(Path("../shared/reference"), "electra/generator").name
    'electra_generator_visible_sentences_family2_reference.npz'
    """
    name = variant.replace("/", "_")
    first_wave = reference_dir / "variants" / f"{name}_visible_sentences_reference.npz"
    if first_wave.is_file():
        return first_wave
    return reference_dir / "variants" / f"{name}_visible_sentences_family2_reference.npz"
