# placeholder: the owner of this fragment replaces it
