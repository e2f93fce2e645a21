"""Planning a campaign from its packing: the one-factor discipline, the embedding
campaign's split, a replan of what is left, the runs kept aside, the summary and the text
for people. `planner.campaign.plan_campaign` puts these together."""
