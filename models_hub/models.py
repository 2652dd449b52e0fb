"""Models of the models_hub app."""
