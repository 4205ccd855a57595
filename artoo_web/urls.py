from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from artoo_web import api, converters, projectviews, views

converters.register()

urlpatterns = [
    path("", views.run_list, name="run-list"),
    path("runs/new", views.run_create, name="run-create"),
    path("runs/<anyuuid:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<anyuuid:run_id>/bus", views.run_bus, name="run-bus"),
    path("runs/<anyuuid:run_id>/cancel", views.run_cancel, name="run-cancel"),
    path(
        "runs/<anyuuid:run_id>/approvals/<anyuuid:approval_id>",
        views.run_approval,
        name="run-approval",
    ),
    path("runs/<anyuuid:run_id>/answer", views.run_answer, name="run-answer"),
    path("runs/<anyuuid:run_id>/audit", views.run_audit, name="run-audit"),
    path("projects/", projectviews.project_list, name="project-list"),
    path("projects/new", projectviews.project_create, name="project-create"),
    path(
        "projects/<anyuuid:project_id>/",
        projectviews.project_detail,
        name="project-detail",
    ),
    path(
        "projects/<anyuuid:project_id>/cancel",
        projectviews.project_cancel,
        name="project-cancel",
    ),
    path(
        "projects/<anyuuid:project_id>/tasks/<str:dispatch_id>",
        projectviews.project_task,
        name="project-task",
    ),
    path("memory/", views.memory_browser, name="memory"),
    path("memory/remember", views.memory_remember, name="memory-remember"),
    path("memory/forget", views.memory_forget, name="memory-forget"),
    path("audit/", views.audit_log, name="audit"),
    path("benchmarks/", views.benchmark, name="benchmark-latest"),
    path("benchmarks/<int:pk>/", views.benchmark, name="benchmark-detail"),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/new", views.token_create, name="token-create"),
    path("tokens/<int:token_id>/revoke", views.token_revoke, name="token-revoke"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/runs", api.run_list, name="api-runs"),
    path("api/runs/<anyuuid:run_id>", api.run_detail, name="api-run"),
    path(
        "api/runs/<anyuuid:run_id>/messages", api.run_messages, name="api-run-messages"
    ),
    path("api/runs/<anyuuid:run_id>/cancel", api.run_cancel, name="api-run-cancel"),
    path(
        "api/runs/<anyuuid:run_id>/approvals/<anyuuid:approval_id>",
        api.run_approval,
        name="api-run-approval",
    ),
    path("api/runs/<anyuuid:run_id>/answer", api.run_answer, name="api-run-answer"),
    path("api/projects", api.project_list, name="api-projects"),
    path("api/projects/<anyuuid:project_id>", api.project_detail, name="api-project"),
    path(
        "api/projects/<anyuuid:project_id>/cancel",
        api.project_cancel,
        name="api-project-cancel",
    ),
    path("admin/", admin.site.urls),
]
