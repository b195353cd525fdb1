"""A second stateful step on a stream is found in the plan's text (no pyspark
here: the text as a classic session prints it, 4.3.0)."""

from sparkwax.engine.planning.chaining import OTHER, stateful_operators_in

ONE_STEP = """\
'Project [unresolvedstarwithcolumns(region, r, None)]
+- ~Project [user#6, n#7L]
   +- ~Filter NOT (coalesce(__sw_metrics#8[8], cast(0 as bigint)) = cast(1 as bigint))
      +- ~CollectMetrics sparkwax:dedupe, [coalesce(sum(__sw_metrics#8[0]), cast(0 as bigint)) AS rows_in#9L], 3
         +- ~FlatMapGroupsInPandasWithState run_streaming_group(user#0, v#3L)#5, [user#0], Append, NoTimeout
            +- ~CollectMetrics sparkwax:dedupe#in, [count(1) AS rows#1L], 2
               +- ~Project [user#0, v#3L]
                  +- StreamingRelation FileSource[/tmp/chain/in], [user#0, region#1, v#2L]
"""  # noqa: E501


def test_a_step_is_named_by_the_metrics_above_it():
    assert stateful_operators_in(ONE_STEP) == ["dedupe"]


def test_two_steps_top_first_and_an_operator_that_is_not_a_step():
    bare = "+- FlatMapGroupsInPandasWithState count(key#0)#3, [key#0], Update, NoTimeout\n"
    two = ONE_STEP.replace("sparkwax:dedupe,", "sparkwax:regions,", 1) + \
        ONE_STEP.replace("StreamingRelation", "x")
    assert stateful_operators_in(two) == ["regions", "dedupe"]
    # an input counted below a step does not name the operator under it
    assert stateful_operators_in(ONE_STEP.splitlines()[5] + "\n" + bare) == [OTHER]
    assert stateful_operators_in(bare + ONE_STEP) == [OTHER, "dedupe"]


def test_a_plan_without_one():
    assert stateful_operators_in("Project [a#1]\n+- StreamingRelation x") == []
    # a user's own observed metrics with another name are not a step
    assert stateful_operators_in("CollectMetrics mine, [count(1)], 1\n"
                                 "+- FlatMapGroupsInPandasWithState f") == [OTHER]


# -- a step after another: what its query needs to start (planning.following) ------------

TWO_STEPS = """\
~Project [region#33, n#34L]
+- ~CollectMetrics sparkwax:tally, [...], 12
   +- ~TransformWithStateInPySpark transformWithStateUDF(region#10, ts#30L)#32, 1, [...], Append, NoTime, pandas, false, 0
      :- ~Project [region#10, region#10, ts#30L]
      :  +- ~CollectMetrics sparkwax:visits, [...], 5
      :     +- ~FlatMapGroupsInPandasWithState run_streaming_group(key#0)#8, [key#0], Append, EventTimeTimeout
      :        +- ~EventTimeWatermark afca90a3, ts#2: timestamp, 2 minutes
      :           +- StreamingRelation FileSource[/tmp/in], [key#0, region#1, ts#2]
      +- LocalRelation <empty>
"""  # noqa: E501


def test_a_query_of_two_steps_holds_a_following_step_and_only_sparkwax_operators():
    from sparkwax.engine.planning.chaining import holds_following_step, only_sparkwax_stateful

    assert stateful_operators_in(TWO_STEPS) == ["tally", "visits"]
    assert holds_following_step(TWO_STEPS) and not holds_following_step(ONE_STEP)
    assert only_sparkwax_stateful(TWO_STEPS)
    aggregated = "~Aggregate [region#1], [region#1, count(1) AS n#5L]\n+- " + TWO_STEPS
    assert not only_sparkwax_stateful(aggregated)  # Spark's own check stays on
    bare_tws = TWO_STEPS.replace("~CollectMetrics sparkwax:tally, [...], 12\n   +- ", "")
    assert not only_sparkwax_stateful(bare_tws)  # a transformWithState not a sparkwax step
