"""Pages of the annotation app, by domain: ``create`` (the create page and the sandbox),
``examples`` (one example's page and the writer's actions), ``validate``, ``review`` (the
owners' queue), ``campaigns``, ``stats`` and ``export``. ``access`` resolves who acts and
turns service errors into pages; ``pages`` builds what the templates show."""
