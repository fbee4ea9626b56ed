"""The API docs pages ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served without any CDN.

FastAPI's own pages load Swagger UI's and ReDoc's JavaScript and CSS from a CDN, so offline they are
blank. Here the same pages (``fastapi.openapi.docs``) point at copies served by this server under
``/docs/assets/``: the files the ``fastapi-offline`` package ships (Swagger UI 5, which renders the
OpenAPI 3.1 document FastAPI produces, ReDoc 2 and a favicon), read from the installed package, so a
wheel or editable install needs no package data of ours. Swagger UI's validator badge (an image from
an outside site) is switched off and ReDoc loads no web fonts: the pages reference local URLs only.

``install_docs(app)`` needs an app created with ``docs_url=None, redoc_url=None``.
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
ASSETS_URL = "/docs/assets"
ASSETS_PACKAGE = ("fastapi_offline", "static")  # (package, folder inside it) holding the asset files
SWAGGER_JS = "swagger-ui-bundle.js"
SWAGGER_CSS = "swagger-ui.css"
REDOC_JS = "redoc.standalone.js"
FAVICON = "favicon.png"
ASSET_FILES = (SWAGGER_JS, SWAGGER_CSS, REDOC_JS, FAVICON)


def _asset(request: Request, name: str) -> str:
    """The URL of an asset as the browser sees it (behind a proxy that sets ``root_path`` too)."""
    return f"{request.scope.get('root_path', '')}{ASSETS_URL}/{name}"


def install_docs(app: FastAPI) -> None:
    """Mount the assets and add ``/docs``, its OAuth2 redirect page and ``/redoc`` to ``app``."""
    if app.docs_url is not None or app.redoc_url is not None:
        raise ValueError("install_docs needs FastAPI(docs_url=None, redoc_url=None)")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or f"{DOCS_URL}/oauth2-redirect"
    swagger_parameters: dict[str, Any] = {**(app.swagger_ui_parameters or {}), "validatorUrl": None}

    app.mount(ASSETS_URL, StaticFiles(packages=[ASSETS_PACKAGE]), name="docs-assets")

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{oauth2_redirect_url}",
            swagger_js_url=_asset(request, SWAGGER_JS),
            swagger_css_url=_asset(request, SWAGGER_CSS),
            swagger_favicon_url=_asset(request, FAVICON),
            swagger_ui_parameters=swagger_parameters,
        )

    @app.get(oauth2_redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=_asset(request, REDOC_JS),
            redoc_favicon_url=_asset(request, FAVICON),
            with_google_fonts=False,
        )
