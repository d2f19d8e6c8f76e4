"""The generation core: the Generation model, running generations (one request path for a
single answer and a battle's two), the sweeper, and the starting services. Pages (playground,
battles, tournaments, history) build on it; it knows none of them."""
