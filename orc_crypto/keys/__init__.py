"""Key providers: where ORC master keys live and how local keys are unwrapped."""
