"""URLs of the arena pages (included by ``annotation.urls``, names ``arena_*``)."""

from django.urls import path

from annotation.arena import views

ARENA = "tasks/<slug:code>/arena/"
BATTLE = ARENA + "battles/<int:pk>/"
BOARD = ARENA + "board/"

urlpatterns = [
    path(ARENA, views.arena_home, name="arena_home"),
    path(BATTLE, views.arena_battle, name="arena_battle"),
    path(BATTLE + "vote", views.arena_vote, name="arena_vote"),
    path(BOARD, views.arena_board_page, name="arena_board"),
    path(ARENA + "board.json", views.arena_board_json, name="arena_board_json"),
    path(ARENA + "board.csv", views.arena_board_csv, name="arena_board_csv"),
    path(BOARD + "snapshots/", views.arena_snapshot_create, name="arena_snapshot_create"),
    path(BOARD + "snapshots/<int:snapshot_id>/", views.arena_snapshot, name="arena_snapshot"),
    path(ARENA + "manage/", views.arena_manage, name="arena_manage"),
    path(ARENA + "battles.jsonl", views.arena_battles_export, name="arena_battles_export"),
]
