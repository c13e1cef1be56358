"""Publishing: a keras_bert model saved in Hugging Face's layout (transformers' `config.json`
and tensor names, the tokenizer files, a model card), and pushed to the Hub.

`save_checkpoint(model, directory)` writes what `transformers.AutoModelFor*.from_pretrained`
and keras_bert's `from_checkpoint` both read; `push_to_hub(directory, "org/name")` uploads it in
one commit. `python -m pipelines.publish` is the command-line form.
"""

from keras_bert.publishing.hub_upload import Push, push_to_hub
from keras_bert.publishing.saving import save_checkpoint
from keras_bert.publishing.transformers_twin import TransformersTwin, transformers_twin

__all__ = ["Push", "TransformersTwin", "push_to_hub", "save_checkpoint", "transformers_twin"]
