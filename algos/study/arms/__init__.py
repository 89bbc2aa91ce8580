"""``rsim study --arms``: the paper's headline as a study -- base vs +GRPO vs +rSIM vs +planner at equal episodes.

Six arms on the study's splits (:data:`algos.study.arms.spec.ARMS`): ``base`` (the untrained reasoner), ``planner``
(the study's tree-trained heads plugged into it), ``grpo`` (the reasoner trained alone), ``grpo_fixed`` (the reasoner
trained alone under the best fixed plan chosen on train + val), ``rsim`` (both agents trained with Stackelberg GRPO)
and ``rsim_warm`` (the same, the planner warm-started from the ``planner`` heads). Every trained arm trains on the
train split at an equal budget (:mod:`.spec`), through ``rsim train``'s trainer (:mod:`.train`); every arm is scored
live on one decode route with a fixed batch (:mod:`.score`); :mod:`.report` compares them; :mod:`.route` measures the
training route on val.
"""
