from django.urls import path, re_path

from artoo_web import consumers, converters, topics

converters.register()

websocket_urlpatterns = [
    path("ws/runs/<anyuuid:run_id>/", consumers.RunConsumer.as_asgi()),
    path(topics.WS_RUN_LIST.lstrip("/"), consumers.RunListConsumer.as_asgi()),
    path("ws/projects/<anyuuid:project_id>/", consumers.ProjectConsumer.as_asgi()),
    # Any other path is refused with a close code instead of a routing error.
    re_path(r"", consumers.NotFoundConsumer.as_asgi()),
]
