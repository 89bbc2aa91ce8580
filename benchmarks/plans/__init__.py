"""The plan-table family: which plans work, per problem and per task, and the statistics that read the tables.
"""
