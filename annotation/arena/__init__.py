"""Arena mode: pairwise battles between anonymous models, rated by Bradley-Terry."""
