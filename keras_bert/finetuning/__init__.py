"""Fine-tuning recipes: checkpoint in, trained and evaluated task model out."""
