"""django_app: a Django site in one file, served under load. Models of authors, books
and reviews in sqlite (a file, shared by the server's threads), a page per list and per
book rendered from templates with loops, filters, includes and a filter of the site's
own, and a JSON endpoint of aggregates. wsgiref serves Django's WSGI handler, a thread
per request; a client process (this script with --client) keeps several connections
busy.

Truth: every view times its own CPU (time.thread_time() around its body, ORM and
template rendering included) into truth["cpu"]["views"]; truth["process_cpu"] is the
server process's CPU at the same moment (the client is another process).
truth["chains"][VIEW] holds each distinct stack the view was called with, as it saw it:
the request thread's bootstrap, wsgiref, Django's handler and middleware, the view."""

import os
import random
import sys
import tempfile
import threading
import time
import urllib.request
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from pbp_common import (CpuBuckets, Truth, capture_stack, client_options, parse_args,
                        remember_chain)

VIEWS = ("book_list", "book_detail", "author_stats")
T = None
CPU = None
# The models: classes Django can make only once it is set up (define()).
Author = Book = Review = None

TEMPLATES = {
    "base.html": (
        "<html><head><title>{% block title %}Library{% endblock %}</title></head><body>"
        "{% block body %}{% endblock %}<footer>{{ now|date:'Y-m-d' }}</footer></body></html>"),
    "book_list.html": (
        "{% extends 'base.html' %}{% load corpus %}"
        "{% block title %}{{ title|title }}{% endblock %}{% block body %}"
        "<h1>{{ title|upper }} ({{ books|length }})</h1><table>"
        "{% for book in books %}{% include 'book_row.html' %}"
        "{% empty %}<tr><td>none</td></tr>{% endfor %}</table>"
        "<ul>{% for a in authors %}<li class='{% cycle 'odd' 'even' %}'>"
        "{{ a.name|truncatewords:2 }}: {{ a.n_books }} books, "
        "{{ a.avg_pages|floatformat:1 }} pages{% if a.n_books > 3 %} (prolific){% endif %}"
        "</li>{% endfor %}</ul>{% endblock %}"),
    "book_row.html": (
        "<tr><td>{{ forloop.counter }}</td><td>{{ book.title|slugify }}</td>"
        "<td>{{ book.author.name|default:'anonymous'|lower }}</td>"
        "<td>{{ book.pages|rot13_digits }}</td>"
        "<td>{{ book.blurb|striptags|wordwrap:20|linebreaksbr }}</td></tr>"),
    "book_detail.html": (
        "{% extends 'base.html' %}{% load corpus %}{% block body %}"
        "<h1>{{ book.title|escape }}</h1><p>by {{ book.author.name }}</p>"
        "{% for r in reviews %}<div>{{ r.stars|stars }} {{ r.text|truncatechars:40 }}"
        "{% if r.stars >= 4 %}<b>recommended</b>{% endif %}</div>{% endfor %}"
        "{% with total=reviews|length %}{{ total }} review{{ total|pluralize }}"
        "{% endwith %}{% endblock %}"),
}


def configure(db_path):
    from django.conf import settings
    settings.configure(
        DEBUG=False,
        SECRET_KEY="corpus",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        USE_TZ=True,
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": db_path,
                               "OPTIONS": {"timeout": 30}}},
        INSTALLED_APPS=[],
        MIDDLEWARE=[
            "django.middleware.security.SecurityMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.clickjacking.XFrameOptionsMiddleware",
        ],
        TEMPLATES=[{
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [("django.template.loaders.locmem.Loader", TEMPLATES)],
                "libraries": {"corpus": "__main__"},
            },
        }],
    )
    import django
    django.setup()


def define(register_into):
    """Models, the template library and URL patterns, once Django is set up."""
    from django import template
    from django.db import models
    from django.urls import path

    class Author(models.Model):
        name = models.CharField(max_length=80)

        class Meta:
            app_label = "corpus"

    class Book(models.Model):
        title = models.CharField(max_length=120)
        author = models.ForeignKey(Author, on_delete=models.CASCADE)
        pages = models.IntegerField()
        blurb = models.TextField()
        views = models.IntegerField(default=0)

        class Meta:
            app_label = "corpus"

    class Review(models.Model):
        book = models.ForeignKey(Book, on_delete=models.CASCADE)
        stars = models.IntegerField()
        text = models.TextField()

        class Meta:
            app_label = "corpus"

    register = template.Library()

    @register.filter
    def rot13_digits(value):
        return "".join(str((int(c) + 3) % 10) if c.isdigit() else c for c in str(value))

    @register.filter
    def stars(value):
        return "*" * int(value) + "." * (5 - int(value))

    register_into.update(Author=Author, Book=Book, Review=Review, register=register)
    register_into["urlpatterns"] = [
        path("books/", timed(book_list)),
        path("books/<int:pk>/", timed(book_detail)),
        path("authors/stats", timed(author_stats)),
    ]


def timed(view):
    """The view, timing its own CPU into the 'views' bucket."""
    name = view.__name__

    def timed_view(request, *args, **kwargs):
        t0 = time.thread_time()
        try:
            return view(request, *args, **kwargs)
        finally:
            CPU.add("views", time.thread_time() - t0)
    timed_view.__name__ = name
    return timed_view


def remember_stack(name):
    remember_chain(T, CPU.lock, name, capture_stack(None, 2))


def book_list(request):
    from django.db.models import Avg, Count, Q
    from django.shortcuts import render
    from django.utils import timezone
    remember_stack("book_list")
    lo = random.randint(50, 400)
    books = list(Book.objects.select_related("author")
                 .filter(Q(pages__gte=lo) | Q(title__icontains="the"))
                 .order_by("-pages", "title")[:40])
    authors = (Author.objects.annotate(n_books=Count("book"), avg_pages=Avg("book__pages"))
               .order_by("-n_books", "name"))
    return render(request, "book_list.html", {"books": books, "authors": authors,
                                              "title": "books over %d pages" % lo,
                                              "now": timezone.now()})


def book_detail(request, pk):
    from django.db import transaction
    from django.db.models import F
    from django.shortcuts import get_object_or_404, render
    from django.utils import timezone
    remember_stack("book_detail")
    book = get_object_or_404(Book.objects.select_related("author"), pk=pk)
    if pk % 7 == 0:
        with transaction.atomic():
            Book.objects.filter(pk=pk).update(views=F("views") + 1)
    reviews = list(book.review_set.order_by("-stars", "id"))
    return render(request, "book_detail.html", {"book": book, "reviews": reviews,
                                                "now": timezone.now()})


def author_stats(request):
    from django.db.models import Avg, Count, Max, Sum
    from django.http import JsonResponse
    remember_stack("author_stats")
    rows = (Author.objects.annotate(books=Count("book"), pages=Sum("book__pages"),
                                    longest=Max("book__pages"),
                                    stars=Avg("book__review__stars"))
            .values("name", "books", "pages", "longest", "stars").order_by("name"))
    return JsonResponse({"authors": list(rows)})


def populate(rng):
    from django.db import connection, transaction
    with connection.schema_editor() as editor:
        for model in (Author, Book, Review):
            editor.create_model(model)
    words = ("the quick brown fox jumps over lazy dog river stone night garden "
             "letters winter of and a <b>bold</b> <i>tale</i>").split()
    with transaction.atomic():
        authors = [Author.objects.create(name=" ".join(rng.choice(words).title()
                                                       for _ in range(3)))
                   for _ in range(25)]
        for i in range(300):
            book = Book.objects.create(
                title=" ".join(rng.choice(words) for _ in range(4)),
                author=rng.choice(authors), pages=rng.randint(40, 900),
                blurb=" ".join(rng.choice(words) for _ in range(40)))
            Review.objects.bulk_create([
                Review(book=book, stars=rng.randint(1, 5),
                       text=" ".join(rng.choice(words) for _ in range(12)))
                for _ in range(rng.randint(0, 6))])


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 64


def client(port, stop, parent):
    """Several connections at once, each a request after the other, until the server's
    process is gone or the time is up."""
    urls = ["/books/", "/authors/stats"] + ["/books/%d/" % i for i in range(1, 301)]

    def hammer(seed):
        rng = random.Random(seed)
        failures = 0
        while time.monotonic() < stop and os.getppid() == parent and failures < 50:
            url = "http://127.0.0.1:%d%s" % (port, rng.choice(urls[:2] * 20 + urls))
            try:
                with urllib.request.urlopen(url, timeout=30) as resp:
                    resp.read()
                failures = 0
            except OSError:
                failures += 1
                time.sleep(0.05)
    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    global T, CPU

    args = parse_args(client_options)
    if args.client:
        client(args.client, time.monotonic() + args.seconds, args.parent)
        return 0
    T = Truth(args.truth)
    CPU = CpuBuckets(T, ["views"])
    T["chains"] = {}
    T["bucket_functions"] = {"views": list(VIEWS)}
    # Beside the truth, in the run directory the tests make afresh for each session.
    db = (args.truth or os.path.join(tempfile.mkdtemp(prefix="pbp-django-"), "t")) + ".sqlite3"
    configure(db)
    define(globals())
    populate(random.Random(1))
    app = __import__("django.core.wsgi", fromlist=["x"]).get_wsgi_application()
    server = make_server("127.0.0.1", 0, app, server_class=ThreadingWSGIServer,
                         handler_class=QuietHandler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, name="wsgiref", daemon=True).start()
    import subprocess
    cl = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", str(port),
                           "--parent", str(os.getpid()), "--seconds", str(args.seconds)])
    # Ready once every view has served and remembered its stack.
    deadline = time.monotonic() + 60
    while len(T.data["chains"]) < len(VIEWS) and time.monotonic() < deadline:
        time.sleep(0.05)
    T["port"] = port
    T["views"] = list(VIEWS)
    CPU.publish()
    stop = time.monotonic() + args.seconds
    while time.monotonic() < stop and cl.poll() is None:
        time.sleep(0.2)
        CPU.publish()
    cl.kill()
    server.shutdown()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
