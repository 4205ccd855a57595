from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from artoo_web import views

urlpatterns = [
    path("", views.run_list, name="run-list"),
    path("runs/new", views.run_create, name="run-create"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
