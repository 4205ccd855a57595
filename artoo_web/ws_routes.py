from django.urls import path

from artoo_web import consumers

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", consumers.RunConsumer.as_asgi()),
]
