"""URLs of the conversation pages (included by ``annotation.urls``, names ``chat_*``)."""

from django.urls import path

from annotation.chat import views

CHAT = "tasks/<slug:code>/chat/"
ONE = CHAT + "<int:pk>/"
REPLY = ONE + "replies/<int:reply_id>/"

urlpatterns = [
    path(CHAT, views.chat_home, name="chat_home"),
    path(CHAT + "results/", views.chat_results, name="chat_results"),
    path(CHAT + "export/<slug:kind>.jsonl", views.chat_export, name="chat_export"),
    path(ONE, views.chat_page, name="chat_page"),
    path(ONE + "send", views.chat_send, name="chat_send"),
    path(ONE + "finish", views.chat_finish, name="chat_finish"),
    path(ONE + "turns/<int:turn_id>/", views.chat_turn, name="chat_turn"),
    path(ONE + "turns/<int:turn_id>/choose", views.chat_choose, name="chat_choose"),
    path(REPLY, views.reply_box, name="chat_reply_box"),
    path(REPLY + "stream", views.reply_stream, name="chat_reply_stream"),
    path(REPLY + "retry", views.reply_retry, name="chat_reply_retry"),
    path(REPLY + "cancel", views.reply_cancel, name="chat_reply_cancel"),
]
