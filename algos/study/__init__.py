"""``rsim study``: does a trained strategy planner help this reasoner, on these tasks, beyond the best fixed plan?

Stages, each resumable: fill the train / val / test (and replication) plan trees; train planner seeds on the train
tree; score every mode on test; write the report (markdown + JSON + plots, one folder).
"""
